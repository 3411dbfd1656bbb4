#!/bin/sh
# embed_vs_llamacpp.sh - embedding throughput and latency of llm-fcgi (behind
# nginx) and llama-server --embedding on the same file, 2 threads each, run
# alternately (docs/performance.md, "Embeddings and reranking"):
#   LLAMA_SERVER=/path/llama-server sh tests/bench/embed_vs_llamacpp.sh MODEL.gguf [ROUNDS=2] [N=1000]
# Each round runs tests/bench/embed_bench.mjs (N inputs of 20-200 tokens as
# 16 concurrent requests of 64 inputs, then the median latency of one short
# query) against: llm-fcgi; llama-server with its defaults; llama-server with
# OMP_WAIT_POLICY=passive (its OpenMP threads otherwise spin-wait, which
# collapses on a loaded machine). LLAMA_ARGS adds llama-server options;
# SKIP_DEFAULT=1 / SKIP_PASSIVE=1 leave out the second / third run. One JSON line per run, then the
# server process's CPU seconds over the run (user + system, from /proc: on a
# shared machine a steadier figure than the wall clock), inputs per CPU
# second, and the load average.
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
    printf 'round %d %-20s ' "$r" "$1"; node "$BENCH" "$3" "$N"
    awk -v a="$c0" -v b="$(cpu_s "$2")" -v n="$N" -v r="$r" -v name="$1" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" \
        'BEGIN { printf "round %d %-20s cpu_s %.1f inputs_per_cpu_s %.2f load %s\n", r, name, b - a, n / (b - a), load }'
}
llama() { # llama NAME [ENV=VALUE...]: one run against a fresh llama-server
    name=$1; shift
    LPORT=$(free_port)
    env "$@" "$LLAMA_SERVER" -m "$MODEL_FILE" --embedding -t 2 --host 127.0.0.1 --port "$LPORT" $LLAMA_ARGS \
        >"$E2E_TMP/llama.log" 2>&1 &
    LPID=$!; E2E_PIDS="$E2E_PIDS $LPID"
    i=0; while [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$LPORT/health")" != 200 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
    run "$name" "$LPID" "http://127.0.0.1:$LPORT/v1/embeddings"
    kill "$LPID"; wait "$LPID" 2>/dev/null
}
r=1
while [ $r -le "$ROUNDS" ]; do
    start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --embedding --threads 2 || exit 1
    run llm-fcgi "$LLM_PID" "$BASE/v1/embeddings"
    stop_server
    [ -n "$SKIP_DEFAULT" ] || llama llama-server
    [ -n "$SKIP_PASSIVE" ] || llama llama-server-passive OMP_WAIT_POLICY=passive
    r=$((r + 1))
done
