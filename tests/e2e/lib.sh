# lib.sh - helpers for the end-to-end tests: TAP output, a temp dir, nginx +
# llm-fcgi started on a free port and a private unix socket, and cleanup
# that always runs (trap). Sourced by tests/e2e/*.sh.
#
# Every external call is bounded by a timeout so a test never hangs.

E2E_TMP=$(mktemp -d "${TMPDIR:-/tmp}/llm-e2e.XXXXXX")
E2E_N=0
E2E_FAILED=0
E2E_PIDS=""
TOP_SRCDIR=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
# servers started by the tests keep their Responses store in the temp dir
# (not in the state directory of the user running the tests)
LLM_STORE=${LLM_STORE:-$E2E_TMP/responses.db}
export LLM_STORE

ok() { # ok COND_STATUS NAME
    E2E_N=$((E2E_N + 1))
    if [ "$1" -eq 0 ]; then echo "ok - $2"; else echo "not ok - $2"; E2E_FAILED=$((E2E_FAILED + 1)); fi
}
# run_tap CMD...: runs a TAP producer (bounded by TAP_TIMEOUT, default
# 180 s) and folds its lines into this script's count
run_tap() {
    timeout "${TAP_TIMEOUT:-180}" "$@" >"$E2E_TMP/sub.tap" 2>&1
    # its plan is dropped and its numbers too (this script numbers nothing)
    grep -v '^1\.\.[0-9]*$' "$E2E_TMP/sub.tap" | sed 's/^\(not \)\{0,1\}ok [0-9][0-9]* /\1ok /'
    E2E_N=$((E2E_N + $(grep -cE '^(not )?ok' "$E2E_TMP/sub.tap")))
    E2E_FAILED=$((E2E_FAILED + $(grep -c '^not ok' "$E2E_TMP/sub.tap")))
    if ! grep -qE '^(not )?ok' "$E2E_TMP/sub.tap"; then ok 1 "$1 produced no results"; fi
}
# run_node SCRIPT: runs a node TAP producer (bounded), folds its lines in
run_node() {
    _js=$(e2e_js "$1"); shift
    TAP_TIMEOUT=${NODE_TIMEOUT:-180} run_tap node "$_js" "$@"
}

# The node tests import npm packages from tests/e2e/node_modules (npm ci).
# A read-only source tree without them (make distcheck: scripts/distcheck.sh)
# names a node_modules directory in E2E_NODE_MODULES; the node tests then
# run from a copy of tests/e2e beside a link to it.
E2E_NM=$TOP_SRCDIR/tests/e2e/node_modules
[ -d "$E2E_NM" ] || E2E_NM=${E2E_NODE_MODULES:-$E2E_NM}
e2e_pkg() { [ -d "$E2E_NM/$1" ]; }
e2e_js() { # e2e_js PATH: PATH, or its copy when the packages are elsewhere
    case "$1" in "$TOP_SRCDIR"/tests/e2e/*) ;; *) echo "$1"; return ;; esac
    if [ "$E2E_NM" = "$TOP_SRCDIR/tests/e2e/node_modules" ]; then echo "$1"; return; fi
    if [ ! -d "$E2E_TMP/e2e-js" ]; then
        mkdir -p "$E2E_TMP/e2e-js"
        cp "$TOP_SRCDIR"/tests/e2e/*.mjs "$TOP_SRCDIR"/tests/e2e/*.json "$E2E_TMP/e2e-js/"
        ln -s "$E2E_NM" "$E2E_TMP/e2e-js/node_modules"
    fi
    echo "$E2E_TMP/e2e-js/${1#"$TOP_SRCDIR"/tests/e2e/}"
}
# A missing prerequisite is a failure, not a skip: scripts/test.sh (and so
# CI) installs every one of them, so a skip would only hide a broken setup.
bail() { echo "not ok 1 - prerequisite: $1"; echo "1..1"; exit 1; }
# need WHAT...: commands by name, plus `model` ($MODEL_FILE), `binary`
# ($LLM_FCGI), `openai` (the pinned npm client in tests/e2e/node_modules)
# and `fcgi_client` ($FCGI_CLIENT).
need() {
    for w in "$@"; do
        case $w in
            model) [ -f "$MODEL_FILE" ] || bail "fixture model $MODEL_FILE missing" ;;
            binary) [ -x "$LLM_FCGI" ] || bail "no llm-fcgi binary (LLM_FCGI=$LLM_FCGI)" ;;
            openai) e2e_pkg openai || bail "the openai npm package is missing (npm ci in tests/e2e)" ;;
            fcgi_client) [ -x "$FCGI_CLIENT" ] || bail "no FastCGI test client (FCGI_CLIENT=$FCGI_CLIENT)" ;;
            *) command -v "$w" >/dev/null 2>&1 || bail "$w is not installed" ;;
        esac
    done
}
diag() { echo "# $*"; }

E2E_AT_EXIT=""
# at_exit CMD: runs CMD (a shell command string) when the script ends,
# before the processes in E2E_PIDS are killed
at_exit() { E2E_AT_EXIT="$E2E_AT_EXIT
$1"; }
e2e_cleanup() {
    eval "$E2E_AT_EXIT" 2>/dev/null
    for p in $E2E_PIDS; do kill "$p" 2>/dev/null; done
    sleep 0.2
    for p in $E2E_PIDS; do kill -9 "$p" 2>/dev/null; done
    if [ -n "$E2E_KEEP" ]; then echo "# kept $E2E_TMP" ; else rm -rf "$E2E_TMP"; fi
}
trap e2e_cleanup EXIT
trap 'exit 1' INT TERM HUP

free_port() {
    node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# stop_server: SIGTERM to both; sets LLM_STATUS to llm-fcgi's exit status
stop_server() {
    kill -TERM "$LLM_PID" 2>/dev/null
    i=0
    while kill -0 "$LLM_PID" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    wait "$LLM_PID" 2>/dev/null; LLM_STATUS=$?
    kill "$NGINX_PID" 2>/dev/null; wait "$NGINX_PID" 2>/dev/null
}

# start_server BINARY ARGS... : llm-fcgi on $E2E_TMP/llm.sock, nginx on $PORT
start_server() {
    SOCK=$E2E_TMP/llm.sock
    "$@" --socket "$SOCK" >"$E2E_TMP/llm.out" 2>"$E2E_TMP/llm.log" &
    LLM_PID=$!
    E2E_PIDS="$E2E_PIDS $LLM_PID"
    wait_socket "$SOCK" || return 1
    start_nginx "unix:$SOCK"
}

# wait_socket PATH: until PATH is a socket or llm-fcgi died (30 s max)
wait_socket() {
    i=0
    while [ ! -S "$1" ] && [ $i -lt 300 ]; do
        kill -0 "$LLM_PID" 2>/dev/null || break
        sleep 0.1; i=$((i + 1))
    done
    [ -S "$1" ] || { diag "llm-fcgi did not start:"; sed 's/^/# /' "$E2E_TMP/llm.log"; return 1; }
}

# start_nginx UPSTREAM: nginx on a free port in front of UPSTREAM
# ("unix:/path" or "127.0.0.1:9000"); sets BASE
start_nginx() {
    PORT=$(free_port)
    mkdir -p "$E2E_TMP/nginx/tmp"
    sed -e "s|@PREFIX@|$E2E_TMP/nginx|g" -e "s|@UPSTREAM@|$1|g" -e "s|@LISTEN@|127.0.0.1:$PORT|g" \
        -e "s|@USER@|$(id -un)|g" -e "s|@GROUP@|$(id -gn)|g" -e "s|@MAX_BODY@|${E2E_NGINX_MAX_BODY:-16m}|g" \
        -e "s|@WWWDIR@|$TOP_SRCDIR/www|g" -e "s|@MARKEDDIR@|${MARKED_DIR:-/usr/share/javascript/marked}|g" \
        "${E2E_NGINX_TEMPLATE:-$TOP_SRCDIR/nginx/llm-fcgi-run.conf.in}" >"$E2E_TMP/nginx/nginx.conf"
    nginx -p "$E2E_TMP/nginx" -e "$E2E_TMP/nginx/error.log" -c "$E2E_TMP/nginx/nginx.conf" \
        >"$E2E_TMP/nginx/out.log" 2>&1 &
    NGINX_PID=$!
    E2E_PIDS="$E2E_PIDS $NGINX_PID"
    BASE=http://127.0.0.1:$PORT
    i=0
    while [ "$(curl -s -m 2 -o /dev/null -w "%{http_code}" "$BASE/health")" != 200 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
    [ "$(curl -s -m 2 -o /dev/null -w "%{http_code}" "$BASE/health")" = 200 ] || { diag "nginx did not start:"; sed 's/^/# /' "$E2E_TMP/nginx/error.log" "$E2E_TMP/nginx/out.log"; return 1; }
    export BASE
}

# start_site SOCKET...: nginx on a free port with the shipped production
# configuration as it is: the site (nginx/llm-fcgi.conf), the snippet it
# includes (llm-fcgi-snippet.conf.in, as installed in snippets/) and the
# upstream (llm-fcgi-upstream.conf, as in conf.d/), except: plain HTTP on
# 127.0.0.1 (no TLS, no port 80 redirect), logs in the temp dir, and the
# upstream made of the given unix sockets (each with the shipped
# max_fails/fail_timeout). E2E_SITE_LISTEN_OPTS adds options to the listen
# directive. Sets BASE.
start_site() {
    PORT=$(free_port)
    d=$E2E_TMP/site
    mkdir -p "$d/tmp" "$d/snippets"
    cp /etc/nginx/fastcgi_params "$d/fastcgi_params"
    sed -e "s|@WWWDIR@|$TOP_SRCDIR/www|g" -e "s|@MARKEDDIR@|${MARKED_DIR:-/usr/share/javascript/marked}|g" \
        "$TOP_SRCDIR/nginx/llm-fcgi-snippet.conf.in" >"$d/snippets/llm-fcgi.conf"
    awk -v socks="$*" '
        /server unix:\/run\/llm-fcgi\/llm-fcgi.sock/ {
            params = $0; sub(/.*\.sock/, "", params)
            n = split(socks, s, " "); for (i = 1; i <= n; i++) print "    server unix:" s[i] params; next }
        { print }' "$TOP_SRCDIR/nginx/llm-fcgi-upstream.conf" >"$d/upstream.conf"
    awk '
        /^server \{/ { inserver = 1; block = $0 "\n"; redirect = 0; next }
        inserver { block = block $0 "\n"; if ($0 ~ /return 301/) redirect = 1
                   if ($0 ~ /^\}/) { inserver = 0; if (!redirect) printf "%s", block }; next }
        { print }' "$TOP_SRCDIR/nginx/llm-fcgi.conf" |
    awk -v port="$PORT" -v logdir="$d" -v lopts="${E2E_SITE_LISTEN_OPTS:-}" '
        /listen 443 ssl/ { print "    listen 127.0.0.1:" port " " lopts ";"; next }
        /listen \[::\]/ || /ssl_/ || /Strict-Transport-Security/ { next }
        /access_log \/var\/log/ { print "    access_log " logdir "/access.log;"; next }
        { print }' >"$d/site.conf"
    cat >"$d/nginx.conf" <<CONF
user $(id -un) $(id -gn);
pid $d/nginx.pid;
error_log $d/error.log info;
daemon off;
events { worker_connections 1024; }
http {
    client_body_temp_path $d/tmp/body; fastcgi_temp_path $d/tmp/fastcgi;
    proxy_temp_path $d/tmp/proxy; uwsgi_temp_path $d/tmp/uwsgi; scgi_temp_path $d/tmp/scgi;
    include $d/upstream.conf;
    include $d/site.conf;
}
CONF
    nginx -p "$d" -e "$d/error.log" -c "$d/nginx.conf" >"$d/out.log" 2>&1 &
    NGINX_PID=$!
    E2E_PIDS="$E2E_PIDS $NGINX_PID"
    BASE=http://127.0.0.1:$PORT
    i=0
    while ! curl -s -m 2 -o /dev/null "$BASE/health" && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
    curl -s -m 2 -o /dev/null "$BASE/health" || { diag "nginx (shipped site) did not start:"; sed 's/^/# /' "$d/error.log" "$d/out.log" | tail -n 20; return 1; }
    export BASE
}

# wait_metric NAME VALUE [AUTH_HEADER]: polls /metrics (10 s max) until the
# gauge NAME equals VALUE; returns 1 on timeout
wait_metric() {
    i=0
    while [ $i -lt 200 ]; do
        v=$(curl -s -m 2 ${3:+-H "$3"} "$BASE/metrics" | sed -n "s/^$1{[^}]*} //p")
        [ "$v" = "$2" ] && return 0
        sleep 0.05; i=$((i + 1))
    done
    diag "$1 stayed at '$v', wanted $2"
    return 1
}

# wait_until CMD...: runs CMD every 50 ms until it succeeds (30 s max);
# returns 1 on timeout. For conditions other than gauges (a file, a line).
wait_until() {
    i=0
    while [ $i -lt 600 ]; do
        "$@" && return 0
        sleep 0.05; i=$((i + 1))
    done
    diag "condition never held: $*"
    return 1
}

# fcgi_client: the raw FastCGI test client built next to llm-fcgi
# (tests/tools/fcgi_client.c), for peers whose reading a test controls
FCGI_CLIENT=${FCGI_CLIENT:-$(dirname "${LLM_FCGI:-.}")/tests/tools/fcgi_client}

# curl with a hard time limit; extra args pass through
c() { curl -s -m "${CURL_TIMEOUT:-30}" "$@"; }

e2e_done() {
    echo "1..$E2E_N"
    [ "$E2E_FAILED" -eq 0 ]
}

# scripted_model OUT [TEMPLATE]: writes the scripted fixture model (a real
# llama GGUF whose greedy output follows reasoning/tool-call scripts, see
# tests/fixtures/scripted_model.h) to OUT with TEMPLATE as its chat
# template (default tests/fixtures/scripted_template.jinja), using the
# mk_scripted built next to $LLM_FCGI (or $MK_SCRIPTED); bails if missing.
scripted_model() {
    mk=${MK_SCRIPTED:-$(dirname "$LLM_FCGI")/tests/fixtures/mk_scripted}
    [ -x "$mk" ] || bail "no fixture generator (MK_SCRIPTED=$mk)"
    "$mk" "$1" "${2:-$TOP_SRCDIR/tests/fixtures/scripted_template.jinja}" 2>"$E2E_TMP/mk_scripted.log"
}
