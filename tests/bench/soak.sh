#!/bin/sh
# soak.sh - long-run test (a benchmark, not part of `make check`): C clients
# send a mix of requests (chat/completions, streamed or not, n > 1,
# logprobs, stop strings, mid-stream disconnects, fuzzed bodies) for a set
# time; the server's RSS, open fds, KV cache use and the latency
# percentiles are sampled over time (tests/bench/soak.mjs).
#
#   tests/bench/soak.sh [SOAK OPTIONS]
#       soak a server that is already running (--url, --server-pid)
#   tests/bench/soak.sh --serve MODEL.gguf [SERVE OPTIONS] -- [SOAK OPTIONS]
#       start `llm-fcgi serve -m MODEL.gguf SERVE OPTIONS` behind nginx on a
#       free loopback port (tests/e2e/lib.sh), soak it, stop both; the
#       server's logs are copied to OUT/ (and checked for sanitizer reports)
#
# Example (the figures in docs/reliability.md):
#   tests/bench/soak.sh --serve ../shared/models/stories260K.gguf --threads 1 \
#       --parallel 16 --ctx-size 2048 -- --concurrency 16 --duration 3600 --interval 60
# Env: LLM_FCGI (binary, default build/llm-fcgi). Outputs in --out (default
# build/bench/soak-DATE): samples.json, summary.txt, plot.svg.
top=$(cd "$(dirname "$0")/../.." && pwd)
mjs=$top/tests/bench/soak.mjs
command -v node >/dev/null || { echo "soak.sh: node (>= 18) is required" >&2; exit 2; }
[ "$1" = "--serve" ] || exec node "$mjs" "$@"

model=$2
[ -r "$model" ] || { echo "soak.sh: cannot read model file '$model'" >&2; exit 2; }
shift 2
serve_args=
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    serve_args="$serve_args '$(printf '%s' "$1" | sed "s/'/'\\\\''/g")'"
    shift
done
[ "$1" = "--" ] && shift
out=; prev=; dur=3600
for a in "$@"; do
    case "$prev" in --out) out=$a ;; --duration) dur=$a ;; esac
    case "$a" in --out=*) out=${a#--out=} ;; --duration=*) dur=${a#--duration=} ;; esac
    prev=$a
done
if [ -z "$out" ]; then
    out=$top/build/bench/soak-$(date -u +%Y%m%dT%H%M%SZ)
    set -- "$@" --out "$out"
fi
mkdir -p "$out"
LLM_FCGI=${LLM_FCGI:-$top/build/llm-fcgi}
[ -x "$LLM_FCGI" ] || "$top/scripts/build.sh" >/dev/null || { echo "soak.sh: build failed" >&2; exit 2; }
TOP_SRCDIR=$top
. "$top/tests/e2e/lib.sh"
save_logs() {
    [ -f "$E2E_TMP/llm.log" ] && cp "$E2E_TMP/llm.log" "$out/llm-fcgi.log"
    [ -f "$E2E_TMP/nginx/error.log" ] && cp "$E2E_TMP/nginx/error.log" "$out/nginx-error.log"
}
trap 'save_logs; e2e_cleanup' EXIT
model_abs=$(cd "$(dirname "$model")" && pwd)/$(basename "$model")
eval "start_server \"\$LLM_FCGI\" serve -m \"\$model_abs\" $serve_args" || { echo "soak.sh: the server did not start" >&2; exit 2; }
echo "llm-fcgi serve -m $model_abs$serve_args" >"$out/server-command.txt"
echo "soak.sh: serving on $BASE, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) CPUs" | tee "$out/machine.txt" >&2
timeout $((${dur%.*} + 900)) node "$mjs" --url "$BASE/v1" --server-pid "$LLM_PID" "$@"
status=$?
stop_server
save_logs
if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$out/llm-fcgi.log"; then
    echo "soak.sh: sanitizer reports in $out/llm-fcgi.log" >&2
    status=1
fi
n5=$(grep -c '^req [0-9a-f]* [A-Z]* [^ ]* 5[0-9][0-9] ' "$out/llm-fcgi.log")
echo "soak.sh: llm-fcgi exit status $LLM_STATUS, $n5 responses 5xx in its log" | tee -a "$out/summary.txt" >&2
[ "$LLM_STATUS" = 0 ] && [ "$n5" = 0 ] || status=1
exit $status
