#!/bin/sh
# soak_e2e.sh - keeps the soak program (tests/bench/soak.sh, a benchmark not
# run in CI) working: the unit tests of soak_lib.mjs, then a soak of a few
# seconds through the --serve wrapper against the real engine on
# stories260K.gguf, whose outputs are checked (every request answered as
# intended, samples with RSS/fds/KV, the plot). Counts and shapes only,
# never timings. Emits TAP.
. "$(dirname "$0")/../e2e/lib.sh"

MODEL_FILE=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}/stories260K.gguf
need node nginx binary model
TAP_NO_PLAN=1 run_node "$TOP_SRCDIR/tests/bench/soak_lib.test.mjs"
out=$E2E_TMP/soak
LLM_FCGI=$LLM_FCGI timeout 120 "$TOP_SRCDIR/tests/bench/soak.sh" --serve "$MODEL_FILE" --threads 1 --parallel 4 \
    --ctx-size 1024 -- --concurrency 4 --duration 6 --interval 2 --out "$out" >"$E2E_TMP/soak.out" 2>&1
st=$?
ok $st "a 6-second soak with 4 clients passes (exit $st)"
[ $st = 0 ] || sed 's/^/# /' "$E2E_TMP/soak.out" | tail -n 20
node -e '
const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const s = r.samples, v = r.verdict;
const kinds = s.length >= 3 && s.every(x => x.rss_kb > 0 && x.fds > 0 && x.kv_capacity_tokens > 0);
process.exit(kinds && v.requests > 20 && v.intended_4xx > 0 && v.intended_disconnects > 0 && v.lost === 0 && r.idle.running === 0 ? 0 : 1);
' "$out/samples.json"
ok $? "samples carry RSS, fds and KV; intended 4xx and disconnects happened; nothing lost; idle after"
grep -q '<polyline' "$out/plot.svg" && grep -q 'PASS' "$out/summary.txt" && [ -s "$out/llm-fcgi.log" ]
ok $? "plot.svg, summary.txt and the server log are written"
e2e_done
