#!/bin/sh
# run.sh - the quick start: install the Debian packages, build, and run
# llm-fcgi + nginx in the foreground on http://127.0.0.1:8080/v1.
#
#   scripts/run.sh [-m MODEL] [--port 8080] [--no-install] [--no-mmproj] [-- SERVE_OPTIONS...]
#   LLM_MODEL=MODEL scripts/run.sh
#
# MODEL is a GGUF file or a hub repository OWNER/NAME[:QUANT] (pulled with
# `llm-fcgi pull`); without one, SmolLM2-135M-Instruct Q8_0 is pulled
# (HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q8_0, or $LLM_DEFAULT_MODEL).
# A repository's vision projector (mmproj-*.gguf) comes with its model and
# is served with --mmproj (images in chat messages) unless --no-mmproj is
# given or the serve options (or $LLM_MMPROJ) name their own projector.
#
# Everything it writes lives in build/run/ ($LLM_RUN_DIR) (socket, nginx config, pid, logs,
# temp files): no system nginx configuration is read or changed, nginx runs
# as the current user. Ctrl-C stops both processes. Options after `--` go to
# `llm-fcgi serve` (e.g. -- --api-key sk-mine --parallel 8).
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
model=${LLM_MODEL:-}
port=${LLM_PORT:-8080}
install=1
mmproj_pull=1
while [ $# -gt 0 ]; do
    case "$1" in
        -m|--model) model=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        --no-install) install=0; shift ;;
        --no-mmproj) mmproj_pull=0; shift ;;
        -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        --) shift; break ;;
        *) echo "run.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
done

# a model is a file, or a hub repository OWNER/NAME[:QUANT] that llm-fcgi
# pulls into $LLM_MODELS_DIR (default ~/.cache/llm-fcgi); none: the default
default_model=${LLM_DEFAULT_MODEL:-HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q8_0}
is_repo() {
    case "$1" in
        /*|./*|../*|*.gguf|*.GGUF) return 1 ;;
    esac
    printf '%s\n' "$1" | grep -Eq '^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*(:[A-Za-z0-9._-]+)?$'
}
if [ -n "$model" ] && ! is_repo "$model"; then
    if [ ! -r "$model" ]; then
        echo "run.sh: cannot read model file '$model'" >&2
        exit 1
    fi
    model=$(cd "$(dirname "$model")" && pwd)/$(basename "$model")
fi

[ "$install" = 1 ] && "$top/scripts/install-deps.sh"
# $LLM_FCGI: an already built binary (the tests'); else build ./build
if [ -n "${LLM_FCGI:-}" ]; then
    bin=$LLM_FCGI
else
    "$top/scripts/build.sh" >/dev/null
    bin=$top/build/llm-fcgi
fi

# a projector named in the serve options (or $LLM_MMPROJ) wins over the repository's
[ -n "${LLM_MMPROJ:-}" ] && mmproj_pull=0
for a in "$@"; do
    case "$a" in --mmproj|--mmproj=*) mmproj_pull=0 ;; esac
done
mmproj=
if [ -z "$model" ] || is_repo "$model"; then
    repo=${model:-$default_model}
    [ -z "$model" ] && echo "run.sh: no model given; fetching the default, $repo (about 145 MB)" >&2
    no_mm=
    [ "$mmproj_pull" = 1 ] || no_mm=--no-mmproj
    # pull prints the model's path, then its projector's when the repository has one
    if pulled=$("$bin" pull $no_mm "$repo"); then
        model=$(printf '%s\n' "$pulled" | sed -n 1p)
        mmproj=$(printf '%s\n' "$pulled" | sed -n 2p)
    else
        cat >&2 <<MSG

run.sh: could not download $repo (no network, or the hub at
${HF_ENDPOINT:-https://huggingface.co} is unreachable: see the message above).

Serve a GGUF file you already have instead:
  scripts/run.sh -m /path/to/model.gguf      (or LLM_MODEL=/path/to/model.gguf scripts/run.sh)
Any GGUF works (Q8_0, Q4_K_M, F16 ...), e.g. SmolLM2-135M-Instruct in Q8_0 from
https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF, fetched with
  curl -L -o model.gguf <its download address>
MSG
        exit 1
    fi
fi
if [ -n "$mmproj" ]; then
    echo "run.sh: vision projector $(basename "$mmproj") (images in chat messages; --no-mmproj leaves it out)" >&2
    set -- --mmproj "$mmproj" "$@"
fi

run=${LLM_RUN_DIR:-$top/build/run}
mkdir -p "$run/tmp"
sock=$run/llm-fcgi.sock
sed -e "s|@PREFIX@|$run|g" -e "s|@UPSTREAM@|unix:$sock|g" -e "s|@LISTEN@|127.0.0.1:$port|g" \
    -e "s|@USER@|$(id -un)|g" -e "s|@GROUP@|$(id -gn)|g" -e "s|@MAX_BODY@|16m|g" \
    -e "s|@WWWDIR@|$top/www|g" -e "s|@MARKEDDIR@|/usr/share/javascript/marked|g" \
    "$top/nginx/llm-fcgi-run.conf.in" >"$run/nginx.conf"

llm_pid=; nginx_pid=; tail_pid=
stop() {
    trap - INT TERM EXIT
    set +e # processes may already be gone
    [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null
    [ -n "$llm_pid" ] && kill -TERM "$llm_pid" 2>/dev/null
    [ -n "$llm_pid" ] && wait "$llm_pid" 2>/dev/null
    [ -n "$tail_pid" ] && kill "$tail_pid" 2>/dev/null
    wait 2>/dev/null
    echo "run.sh: stopped" >&2
}
trap 'stop; exit 0' INT TERM
trap stop EXIT

# stored Responses (/v1/responses) live next to the logs: build/run/responses.db
"$bin" serve -m "$model" --socket "$sock" --store "${LLM_STORE:-$run/responses.db}" "$@" 2>>"$run/llm-fcgi.log" &
llm_pid=$!
tail -n 0 -f "$run/llm-fcgi.log" >&2 &
tail_pid=$!
i=0
while [ ! -S "$sock" ]; do
    sleep 0.2; i=$((i + 1))
    if [ $i -gt 600 ] || ! kill -0 "$llm_pid" 2>/dev/null; then
        echo "run.sh: llm-fcgi did not start (see $run/llm-fcgi.log)" >&2
        exit 1
    fi
done
nginx -p "$run" -e "$run/error.log" -c "$run/nginx.conf" &
nginx_pid=$!
sleep 0.5
if ! kill -0 "$nginx_pid" 2>/dev/null; then
    echo "run.sh: nginx did not start (see $run/error.log; is port $port free?)" >&2
    exit 1
fi
cat >&2 <<MSG

llm-fcgi is serving $(basename "$model") at http://127.0.0.1:$port/v1  (Ctrl-C stops)
  curl http://127.0.0.1:$port/v1/chat/completions -H 'Content-Type: application/json' \\
    -d '{"messages":[{"role":"user","content":"Hello!"}],"stream":true}'
Logs: $run/llm-fcgi.log, $run/error.log, $run/access.log

MSG
wait "$nginx_pid"
