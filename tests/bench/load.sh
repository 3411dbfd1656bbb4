#!/bin/sh
# load.sh - run the load generator (tests/bench/load.mjs), either against a
# server that is already running, or against a private llm-fcgi + nginx that
# it starts for a model in a temp dir and stops afterwards.
#
#   tests/bench/load.sh [LOAD OPTIONS]
#       load an existing server (default --url http://127.0.0.1:8080/v1)
#   tests/bench/load.sh --serve MODEL.gguf [SERVE OPTIONS] -- [LOAD OPTIONS]
#       start `llm-fcgi serve -m MODEL.gguf SERVE OPTIONS` behind nginx on a
#       free loopback port (tests/e2e/lib.sh), load it, stop both. Without
#       --parallel, the server gets --parallel = the largest concurrency.
#       The server's logs are copied to OUT/llm-fcgi.log, OUT/nginx-error.log.
#
# LOAD OPTIONS: see `tests/bench/load.sh --help` and docs/benchmarking.md.
# Env: LLM_FCGI (binary, default build/llm-fcgi; built with scripts/build.sh
# when missing), LOAD_SERVE_TIMEOUT (seconds, default 3600: hard limit of a
# --serve run).
top=$(cd "$(dirname "$0")/../.." && pwd)
mjs=$top/tests/bench/load.mjs
command -v node >/dev/null || { echo "load.sh: node (>= 18) is required" >&2; exit 2; }

if [ "$1" != "--serve" ]; then
    exec node "$mjs" "$@"
fi

# ---- --serve MODEL [SERVE OPTIONS] -- [LOAD OPTIONS]
model=$2
[ -n "$model" ] || { echo "load.sh: --serve needs a model file" >&2; exit 2; }
[ -r "$model" ] || { echo "load.sh: cannot read model file '$model'" >&2; exit 2; }
shift 2
# split the arguments at `--`: serve options into $serve_args (quoted for
# eval), the rest stays in "$@" for load.mjs
serve_args=
has_parallel=0; sprev=
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    case "$1" in --parallel|--parallel=*) has_parallel=1 ;; --api-key=*) LLM_API_KEY=${1#--api-key=} ;; esac
    # a key the server requires is also the client's (load.mjs reads LLM_API_KEY)
    [ "$sprev" = --api-key ] && [ -z "$LLM_API_KEY" ] && LLM_API_KEY=$1
    sprev=$1
    serve_args="$serve_args '$(printf '%s' "$1" | sed "s/'/'\\\\''/g")'"
    shift
done
[ "$1" = "--" ] && shift
export LLM_API_KEY

# load options the wrapper needs to know: --out (logs go there) and the
# largest --concurrency (the default --parallel)
out=; conc=1,2,4,8,16; note=; prev=
for a in "$@"; do
    case "$prev" in --out) out=$a ;; --concurrency) conc=$a ;; --note) note=$a ;; esac
    case "$a" in --out=*) out=${a#--out=} ;; --concurrency=*) conc=${a#--concurrency=} ;; --note=*) note=${a#--note=} ;; esac
    prev=$a
done
if [ -z "$out" ]; then
    out=$top/build/bench/load-$(date -u +%Y%m%dT%H%M%SZ)
    set -- "$@" --out "$out"
fi
maxc=$(printf '%s\n' "$conc" | tr ',' '\n' | sort -n | tail -n 1)
case "$maxc" in ''|*[!0-9]*) maxc=16 ;; esac
[ "$has_parallel" = 1 ] || serve_args="$serve_args --parallel $maxc"

command -v nginx >/dev/null || { echo "load.sh: nginx is required for --serve (scripts/install-deps.sh)" >&2; exit 2; }
LLM_FCGI=${LLM_FCGI:-$top/build/llm-fcgi}
if [ ! -x "$LLM_FCGI" ]; then
    "$top/scripts/build.sh" >/dev/null || { echo "load.sh: build failed" >&2; exit 2; }
fi

TOP_SRCDIR=$top   # read by lib.sh
. "$top/tests/e2e/lib.sh"
save_logs() {
    mkdir -p "$out"
    [ -f "$E2E_TMP/llm.log" ] && cp "$E2E_TMP/llm.log" "$out/llm-fcgi.log"
    [ -f "$E2E_TMP/nginx/error.log" ] && cp "$E2E_TMP/nginx/error.log" "$out/nginx-error.log"
}
trap 'save_logs; e2e_cleanup' EXIT

model_abs=$(cd "$(dirname "$model")" && pwd)/$(basename "$model")
[ -n "$note" ] || set -- "$@" --note "$(basename "$model")"
echo "load.sh: starting llm-fcgi serve -m $model_abs$serve_args" >&2
eval "start_server \"\$LLM_FCGI\" serve -m \"\$model_abs\" $serve_args" || {
    echo "load.sh: the server did not start" >&2
    exit 2
}
echo "load.sh: serving on $BASE (temp dir $E2E_TMP)" >&2
mkdir -p "$out"
echo "llm-fcgi serve -m $model_abs$serve_args" >"$out/server-command.txt"

timeout "${LOAD_SERVE_TIMEOUT:-3600}" node "$mjs" --url "$BASE/v1" --server-pid "$LLM_PID" "$@"
status=$?
stop_server
[ "$LLM_STATUS" = 0 ] || echo "load.sh: llm-fcgi exited with status $LLM_STATUS (see $out/llm-fcgi.log)" >&2
exit $status
