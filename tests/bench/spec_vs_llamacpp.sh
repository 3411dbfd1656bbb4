#!/bin/sh
# spec_vs_llamacpp.sh - speculative decoding with a draft model, side by
# side with llama-server, through HTTP (tests/bench/spec_http.mjs: decode
# tokens/s of a streamed greedy completion with ignore_eos).
#
#   LLAMA_SERVER=/path/llama-server tests/bench/spec_vs_llamacpp.sh TARGET.gguf DRAFT.gguf [N [REPS [NMAX...]]]
#
# For each round (2): llama-server without a draft, with -md DRAFT and each
# --spec-draft-n-max of NMAX (default 4 8 16), then llm-fcgi (behind nginx,
# tests/e2e/lib.sh) without speculation (--spec none) and with
# --model-draft DRAFT; 2 threads each, one server at a time. Prints one
# line per run: SERVER CONFIG decode_tps. Never a pass/fail test.
top=$(cd "$(dirname "$0")/../.." && pwd)
target=$1 draft=$2 n=${3:-128} reps=${4:-3}
shift 2; [ $# -gt 0 ] && shift; [ $# -gt 0 ] && shift
nmax=${*:-4 8 16}
[ -r "$target" ] && [ -r "$draft" ] && [ -x "${LLAMA_SERVER:-}" ] || {
    echo "usage: LLAMA_SERVER=... $0 TARGET.gguf DRAFT.gguf [N [REPS [NMAX...]]]" >&2; exit 2; }
LLM_FCGI=${LLM_FCGI:-$top/build/llm-fcgi}
export LLM_FCGI TOP_SRCDIR=$top
tmp=$(mktemp -d "${TMPDIR:-/tmp}/spec-vs.XXXXXX")
trap 'kill $lp 2>/dev/null; rm -rf "$tmp"' EXIT
printf 'Once upon a time, in a small village at the edge of a great forest, there lived an old clockmaker who' >"$tmp/prompt.txt"
port=$((20000 + $$ % 20000))

run_llama() { # LABEL ARGS...
    label=$1; shift
    "$LLAMA_SERVER" -m "$target" -t 2 -tb 2 -c 2048 --port "$port" --host 127.0.0.1 -np 1 "$@" >"$tmp/llama.log" 2>&1 &
    lp=$!
    i=0; until curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; do
        sleep 1; i=$((i + 1)); [ $i -gt 300 ] && { echo "llama-server did not start" >&2; tail "$tmp/llama.log" >&2; exit 1; }
    done
    node "$top/tests/bench/spec_http.mjs" "http://127.0.0.1:$port" "$tmp/prompt.txt" "$n" "$reps" |
        sed "s/^/llama-server $label /"
    kill $lp; wait $lp 2>/dev/null
}

run_ours() { # LABEL SERVE-ARGS...
    label=$1; shift
    (
        . "$top/tests/e2e/lib.sh"
        start_server "$LLM_FCGI" serve -m "$target" --threads 2 --parallel 1 --ctx-size 2048 "$@" >/dev/null || exit 1
        node "$top/tests/bench/spec_http.mjs" "$BASE" "$tmp/prompt.txt" "$n" "$reps" | sed "s/^/llm-fcgi $label /"
        stop_server
    )
}

for round in 1 2; do
    run_llama "no-draft"
    for k in $nmax; do run_llama "draft-n-max-$k" -md "$draft" -td 2 -tbd 2 --spec-draft-n-max "$k"; done
    run_ours "no-spec" --spec none
    run_ours "model-draft" --model-draft "$draft"
done
