#!/bin/sh
# chat_page.sh - the chat page (www/) in Debian's chromium, headless, driven
# by puppeteer-core (chat_page.test.mjs):
#  1. the run template (as scripts/run.sh serves it) in front of the
#     scripted fixture model with llm-fcgi's key check: the 401 as the API
#     words it, the model name, a streamed answer with its reasoning folded,
#     a tool call;
#  2. the production site nginx/llm-fcgi.conf (TLS with a test certificate,
#     the snippet, the conf.d upstream with its nginx-side key check
#     switched on) in front of the 87M-parameter bench model (slow enough
#     that a long answer is still streaming when Stop is clicked): an
#     answer with max tokens, text shown while it streams, the stop button
#     cancelling the sequence in llm-fcgi.
# Screenshots go to $SHOTS (default tests/e2e/screenshots under the build
# directory) and are kept as test artifacts. Emits TAP.
. "$(dirname "$0")/lib.sh"

MODEL_FILE=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}/stories260K.gguf
need nginx node curl model binary openssl
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || bail "chromium is not installed (apt-get install chromium)"
e2e_pkg puppeteer-core || bail "puppeteer-core missing (npm ci in tests/e2e)"
[ -f /usr/share/javascript/marked/marked.min.js ] || bail "libjs-marked is not installed"
SHOTS=${SHOTS:-$PWD/tests/e2e/screenshots}
mkdir -p "$SHOTS"
export SHOTS

# ---- 1. the run template, scripted model, llm-fcgi checks the key
SCRIPTED=$E2E_TMP/scripted.gguf
scripted_model "$SCRIPTED" || bail "cannot write the scripted fixture"
if start_server "$LLM_FCGI" serve -m "$SCRIPTED" --served-model-name scripted --api-key sk-page \
        --parallel 2 --threads 1 --ctx-size 2048; then
    ok 0 "llm-fcgi + nginx (run template) start"
    c -o /dev/null -w '%{http_code} %{content_type}' "$BASE/" >"$E2E_TMP/root"
    grep -q '^200 text/html' "$E2E_TMP/root"; ok $? "GET / is the page ($(cat "$E2E_TMP/root"))"
    [ "$(c -o /dev/null -w '%{http_code} %{content_type}' "$BASE/ui/marked.min.js")" = "200 application/javascript" ]
    ok $? "/ui/marked.min.js from libjs-marked, as JavaScript"
    [ "$(c -o /dev/null -w '%{http_code} %{content_type}' "$BASE/ui/chat.css")" = "200 text/css" ]; ok $? "/ui/chat.css as text/css"
    BASE=$BASE KEY=sk-page SUITE=scripted NODE_TIMEOUT=240 run_node "$TOP_SRCDIR/tests/e2e/chat_page.test.mjs"
    stop_server
else
    ok 1 "llm-fcgi + nginx (run template) start"
fi

# ---- 2. the production site: TLS, snippet, conf.d upstream, nginx-side keys
d=$E2E_TMP/site
mkdir -p "$d/tmp" "$d/snippets" "$d/logs"
timeout 60 openssl req -x509 -newkey rsa:2048 -nodes -keyout "$d/k.pem" -out "$d/c.pem" -days 1 -subj /CN=127.0.0.1 \
    >/dev/null 2>&1 || bail "openssl cannot make a test certificate"
SOCK=$E2E_TMP/site.sock
BENCH_MODEL=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}/bench100m-q4_k_m.gguf
[ -f "$BENCH_MODEL" ] || bail "fixture model $BENCH_MODEL missing"
"$LLM_FCGI" serve -m "$BENCH_MODEL" --served-model-name bench --threads 1 --parallel 2 --ctx-size 4096 --socket "$SOCK" \
    >/dev/null 2>"$E2E_TMP/llm.log" &
LLM_PID=$!
E2E_PIDS="$E2E_PIDS $LLM_PID"
wait_socket "$SOCK" || { ok 1 "llm-fcgi starts for the site"; e2e_done; exit 1; }
PORT=$(free_port); PORT80=$(free_port)
cp /etc/nginx/fastcgi_params "$d/fastcgi_params"
sed -e "s|@WWWDIR@|$TOP_SRCDIR/www|g" -e "s|@MARKEDDIR@|/usr/share/javascript/marked|g" \
    "$TOP_SRCDIR/nginx/llm-fcgi-snippet.conf.in" >"$d/snippets/llm-fcgi.conf"
sed -e "s|unix:/run/llm-fcgi/llm-fcgi.sock|unix:$SOCK|" -e 's|^    default 0;|    default 1;|' \
    -e 's|^    # "Bearer sk-replace-me-1" 0;|    "Bearer sk-site" 0;|' \
    "$TOP_SRCDIR/nginx/llm-fcgi-upstream.conf" >"$d/upstream.conf"
sed -e "s|/etc/letsencrypt/live/llm.example.com/fullchain.pem|$d/c.pem|" \
    -e "s|/etc/letsencrypt/live/llm.example.com/privkey.pem|$d/k.pem|" -e "s|/var/log/nginx/|$d/logs/|" \
    -e "s|listen 443 ssl http2;|listen 127.0.0.1:$PORT ssl http2;|" -e "s|listen 80;|listen 127.0.0.1:$PORT80;|" \
    -e '/listen \[::\]/d' "$TOP_SRCDIR/nginx/llm-fcgi.conf" >"$d/site.conf"
cat >"$d/nginx.conf" <<CONF
user $(id -un) $(id -gn);
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log warn;
daemon off;
events { worker_connections 256; }
http {
    client_body_temp_path $d/tmp/body;
    proxy_temp_path $d/tmp/proxy;
    fastcgi_temp_path $d/tmp/fastcgi;
    uwsgi_temp_path $d/tmp/uwsgi;
    scgi_temp_path $d/tmp/scgi;
    include /etc/nginx/mime.types;
    include $d/upstream.conf;
    include $d/site.conf;
}
CONF
nginx -p "$d" -e "$d/error.log" -c "$d/nginx.conf" >"$d/out.log" 2>&1 &
NGINX_PID=$!
E2E_PIDS="$E2E_PIDS $NGINX_PID"
BASE=https://127.0.0.1:$PORT
up() { [ "$(curl -ks -m 2 -o /dev/null -w '%{http_code}' "$BASE/health")" = 200 ]; }
wait_until up
st=$?
ok $st "the production site (TLS, snippet, conf.d upstream) serves /health"
[ $st = 0 ] || sed 's/^/# /' "$d/error.log" "$d/out.log"
[ "$(curl -ks -m 10 -o /dev/null -w '%{http_code} %{content_type}' "$BASE/ui/chat.css")" = "200 text/css" ]
ok $? "the site serves the page's stylesheet as text/css"
code=$(curl -ks -m 10 -o "$E2E_TMP/nokey" -w '%{http_code}' "$BASE/v1/models")
ok $([ "$code" = 401 ] && grep -q 'Invalid API key' "$E2E_TMP/nokey"; echo $?) "nginx-side key check: no key -> 401 JSON"
code=$(curl -ks -m 10 -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer sk-site' "$BASE/v1/models")
ok $([ "$code" = 200 ]; echo $?) "a listed key passes ($code)"
code=$(curl -ks -m 10 -o "$E2E_TMP/404" -w '%{http_code}' "$BASE/nowhere")
ok $([ "$code" = 404 ] && grep -q '"not_found"' "$E2E_TMP/404"; echo $?) "other paths: JSON 404 ($code)"
code=$(curl -s -m 10 -o /dev/null -w '%{http_code} %{redirect_url}' "http://127.0.0.1:$PORT80/v1/models")
ok $(echo "$code" | grep -q '^301 https://'; echo $?) "plain HTTP redirects to HTTPS ($code)"
BASE=$BASE KEY=sk-site SUITE=site NODE_TLS_REJECT_UNAUTHORIZED=0 NODE_TIMEOUT=240 \
    run_node "$TOP_SRCDIR/tests/e2e/chat_page.test.mjs"
diag "screenshots: $SHOTS"
e2e_done
