#!/bin/sh
# grammar_e2e.sh - decode throughput of a constrained request against the
# same request unconstrained, end to end through nginx (tests/bench/load.sh
# --serve), runs alternating A B A B so that a noisy machine affects both.
#
#   tests/bench/grammar_e2e.sh MODEL.gguf [PAIRS] [CONCURRENCY] [MAX_TOKENS]
#
# A: completions with ignore_eos (every request generates MAX_TOKENS tokens).
# B: the same with response_format json_schema {"text": string of at least
#    50000 code points}: the answer cannot end before MAX_TOKENS either, so
#    both runs generate the same number of tokens, and B computes a token
#    mask for every one of them (on the scheduler's mask thread, overlapped
#    with the next forward pass).
# Prints one line per run and the B/A ratios of tokens/s and TPOT p50; the
# runs' results.json are under build/bench/grammar-e2e-<time>/. Env as
# load.sh (LLM_FCGI, ...); SERVE_ARGS: extra `llm-fcgi serve` options
# (default --threads 2).
top=$(cd "$(dirname "$0")/../.." && pwd)
model=$1
pairs=${2:-3}
conc=${3:-1}
maxtok=${4:-256}
[ -r "$model" ] || { echo "usage: $0 MODEL.gguf [PAIRS] [CONCURRENCY] [MAX_TOKENS]" >&2; exit 2; }
out=$top/build/bench/grammar-e2e-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out" || exit 2
schema='{"response_format":{"type":"json_schema","json_schema":{"name":"long_text","strict":true,"schema":{"type":"object","properties":{"text":{"type":"string","minLength":50000}},"required":["text"],"additionalProperties":false}}}}'
requests=$((conc * 4))
[ "$requests" -lt 6 ] && requests=6

run() { # run NAME [LOAD OPTIONS]
    name=$1
    shift
    # shellcheck disable=SC2086
    "$top/tests/bench/load.sh" --serve "$model" ${SERVE_ARGS:---threads 2} -- --concurrency "$conc" \
        --max-tokens "$maxtok" --requests "$requests" --ignore-eos --out "$out/$name" "$@" >"$out/$name.log" 2>&1 ||
        { echo "grammar_e2e: run $name failed (see $out/$name.log)" >&2; exit 1; }
    node -e '
        const r = JSON.parse(require("fs").readFileSync(process.argv[1] + "/results.json", "utf8"));
        const l = r.levels[0];
        console.log([process.argv[2], l.tokens_per_s.toFixed(1), l.tpot_ms.p50.toFixed(2), (l.completion_tokens / l.ok).toFixed(0)].join(" "));
    ' "$out/$name" "$name" >>"$out/summary.txt" || exit 1
    tail -n 1 "$out/summary.txt"
}

echo "# run tok/s TPOT-p50-ms gen-tokens-mean   ($model, C=$conc, $maxtok tokens)"
i=1
while [ "$i" -le "$pairs" ]; do
    run "A$i-unconstrained"
    run "B$i-constrained" --extra "$schema"
    i=$((i + 1))
done
node -e '
    const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => l.split(" "));
    const a = rows.filter((r) => r[0].startsWith("A")), b = rows.filter((r) => r[0].startsWith("B"));
    const ratios = a.map((x, i) => [Number(b[i][1]) / Number(x[1]), Number(b[i][2]) / Number(x[2])]);
    const med = (v) => v.slice().sort((p, q) => p - q)[Math.floor(v.length / 2)];
    console.log("constrained/unconstrained per pair, tok/s: " + ratios.map((r) => r[0].toFixed(3)).join(" ") +
        "  (median " + med(ratios.map((r) => r[0])).toFixed(3) + ")");
    console.log("constrained/unconstrained per pair, TPOT p50 (time per output token): " + ratios.map((r) => r[1].toFixed(3)).join(" ") +
        "  (median " + med(ratios.map((r) => r[1])).toFixed(3) + ")");
' "$out/summary.txt"
