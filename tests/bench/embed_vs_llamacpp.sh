#!/bin/sh
# embed_vs_llamacpp.sh - embedding throughput of llm-fcgi (behind nginx) and
# llama-server --embedding on the same file, 2 threads each, run
# alternately (docs/performance.md, "Embeddings"):
#   LLAMA_SERVER=/path/llama-server sh tests/bench/embed_vs_llamacpp.sh MODEL.gguf [ROUNDS=2] [N=1000]
# Each round: tests/bench/embed_bench.mjs against llm-fcgi, then against
# llama-server (default slots, plus LLAMA_ARGS if set). One JSON line per
# run, then the server process's CPU seconds over the run (user + system,
# from /proc: on a shared machine a steadier figure than the wall clock).
. "$(dirname "$0")/../e2e/lib.sh"
MODEL_FILE=$1; ROUNDS=${2:-2}; N=${3:-1000}
LLM_FCGI=${LLM_FCGI:-$TOP_SRCDIR/build/llm-fcgi}
BENCH=$TOP_SRCDIR/tests/bench/embed_bench.mjs
[ -x "$LLAMA_SERVER" ] || { echo "set LLAMA_SERVER to a llama-server binary"; exit 2; }
cpu_s() { # cpu_s PID: user + system CPU seconds of the process so far
    awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"
}
run() { # run NAME PID URL
    c0=$(cpu_s "$2")
    printf 'round %d %-12s ' "$r" "$1"; node "$BENCH" "$3" "$N"
    echo "round $r $1 cpu_s $(awk -v a="$c0" -v b="$(cpu_s "$2")" 'BEGIN { printf "%.1f", b - a }') load $(cut -d' ' -f1-3 /proc/loadavg)"
}
r=1
while [ $r -le "$ROUNDS" ]; do
    start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --embedding --threads 2 || exit 1
    run llm-fcgi "$LLM_PID" "$BASE/v1/embeddings"
    stop_server
    LPORT=$(free_port)
    "$LLAMA_SERVER" -m "$MODEL_FILE" --embedding -t 2 --host 127.0.0.1 --port "$LPORT" $LLAMA_ARGS \
        >"$E2E_TMP/llama.log" 2>&1 &
    LPID=$!; E2E_PIDS="$E2E_PIDS $LPID"
    i=0; while [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$LPORT/health")" != 200 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
    run llama-server "$LPID" "http://127.0.0.1:$LPORT/v1/embeddings"
    kill "$LPID"; wait "$LPID" 2>/dev/null
    r=$((r + 1))
done
