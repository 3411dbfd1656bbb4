#!/bin/sh
# serve_stub.sh - end-to-end tests of `serve` through a real nginx, over the
# deterministic stub engine (tests/e2e/llm-fcgi-stub): the OpenAI SDK suite
# (api.test.mjs), then curl checks of auth, limits (413, 429), a client that
# disconnects mid-stream, and SIGTERM during a stream. Emits TAP.
. "$(dirname "$0")/lib.sh"

STUB=${LLM_FCGI_STUB:-$(dirname "$LLM_FCGI")/tests/e2e/llm-fcgi-stub}
command -v nginx >/dev/null || skip_all "nginx not installed"
command -v node >/dev/null || skip_all "node not installed"
[ -x "$STUB" ] || skip_all "no stub binary at $STUB"
[ -d "$TOP_SRCDIR/tests/e2e/node_modules/openai" ] || skip_all "run npm ci in tests/e2e"

# ---- phase 1: auth on, 4 slots, a little engine delay so streams overlap
export LLM_STUB_DELAY_MS=5
start_server "$STUB" serve -m stub.gguf --served-model-name stub --served-model-name alias \
    --api-key sk-one --api-key sk-two --parallel 4 || { ok 1 "server starts"; e2e_done; exit 1; }
ok 0 "nginx + llm-fcgi-stub start"
[ "$(stat -c %a "$SOCK")" = 660 ]; ok $? "unix socket has mode 0660"

BASE=$BASE API_KEY=sk-two MODEL=stub E2E_STUB=1 E2E_CONCURRENCY=1 run_node "$TOP_SRCDIR/tests/e2e/api.test.mjs"

code=$(c -o /dev/null -w '%{http_code}' "$BASE/v1/models")
ok $([ "$code" = 401 ]; echo $?) "no key -> 401"
c -D "$E2E_TMP/h" -o /dev/null -H 'Authorization: Bearer nope' "$BASE/v1/models"
grep -qi '^WWW-Authenticate: Bearer' "$E2E_TMP/h"; ok $? "401 carries WWW-Authenticate: Bearer"
code=$(c -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer sk-one' "$BASE/v1/models")
ok $([ "$code" = 200 ]; echo $?) "first configured key accepted"
code=$(c -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer sk-one' "$BASE/v1/models/alias")
ok $([ "$code" = 200 ]; echo $?) "alias served name accepted"
code=$(c -o /dev/null -w '%{http_code}' "$BASE/ping")
ok $([ "$code" = 200 ]; echo $?) "/ping open with keys configured"
out=$(c -H 'Authorization: Bearer sk-one' -d '{"prompt":"Hi!","max_tokens":10,"temperature":0}' "$BASE/v1/completions")
echo "$out" | grep -q '"finish_reason":"stop"'; ok $? "EOS ends the completion with finish_reason stop"
c -N -H 'Authorization: Bearer sk-one' -d '{"prompt":"Hi","max_tokens":40,"stream":true}' "$BASE/v1/completions" >"$E2E_TMP/s1" &
wait $!
n=$(grep -c '^data: ' "$E2E_TMP/s1")
ok $([ "$n" -ge 38 ] && [ "$n" -le 42 ]; echo $?) "40 tokens stream as one chunk per character ($n events)"
if grep -q 'sk-one\|sk-two' "$E2E_TMP/llm.log"; then ok 1 "keys never logged"; else ok 0 "keys never logged"; fi
n=$(grep -c '^req [0-9a-f]\{32\} ' "$E2E_TMP/llm.log")
ok $([ "$n" -gt 20 ]; echo $?) "one log line per request with the request id ($n)"
stop_server
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM when idle: exit 0 (got $LLM_STATUS)"
[ ! -e "$SOCK" ]; ok $? "socket removed on exit"

# ---- phase 2: no auth, one slot, a queue of one, small body limit, slow engine
export LLM_STUB_DELAY_MS=30
E2E_NGINX_MAX_BODY=1m start_server "$STUB" serve -m stub.gguf --parallel 1 --max-queue 1 --max-body 2000 \
    --ping-interval 1 || { ok 1 "server 2 starts"; e2e_done; exit 1; }
code=$(c -o /dev/null -w '%{http_code}' "$BASE/v1/models")
ok $([ "$code" = 200 ]; echo $?) "auth off: no key needed"
big=$(head -c 3000 /dev/zero | tr '\0' 'a')
c -o "$E2E_TMP/b" -w '%{http_code}' -d "{\"prompt\":\"$big\"}" "$BASE/v1/completions" >"$E2E_TMP/code"
[ "$(cat "$E2E_TMP/code")" = 413 ] && grep -q '"error"' "$E2E_TMP/b"; ok $? "body over --max-body -> 413 JSON"

# a slow stream holds the only slot, a second one waits in the queue (and
# gets ": ping" comments meanwhile), a third is refused with 429
c -N -d '{"prompt":"Hi","max_tokens":60,"stream":true}' "$BASE/v1/completions" >"$E2E_TMP/long" &
LONG=$!
wait_metric llm_num_requests_running 1
c -N -d '{"prompt":"Hi","max_tokens":3,"stream":true}' "$BASE/v1/completions" >"$E2E_TMP/queued" &
QUEUED=$!
wait_metric llm_num_requests_waiting 1
c -o "$E2E_TMP/q" -w '%{http_code}' -d '{"prompt":"x","max_tokens":2}' "$BASE/v1/completions" >"$E2E_TMP/code"
[ "$(cat "$E2E_TMP/code")" = 429 ] && grep -q '"rate_limit_error"' "$E2E_TMP/q"; ok $? "full queue -> 429 JSON"
wait $LONG
tail -c 20 "$E2E_TMP/long" | grep -q 'data: \[DONE\]'; ok $? "the running stream is unaffected"
wait $QUEUED
head -n 1 "$E2E_TMP/queued" | grep -q '^: ping$' && tail -c 20 "$E2E_TMP/queued" | grep -q 'data: \[DONE\]'
ok $? "a queued stream gets ': ping' comments while it waits, then its tokens"

# a client that disconnects mid-stream frees its slot at once
c -N -m 1 -d '{"prompt":"Hi","max_tokens":400,"stream":true}' "$BASE/v1/completions" >"$E2E_TMP/cut" 2>/dev/null
wait_metric llm_num_requests_running 0; ok $? "after a disconnect /metrics shows no running sequence"
c "$BASE/metrics" >"$E2E_TMP/m"
grep -q '^llm_client_disconnects_total{[^}]*} 1$' "$E2E_TMP/m"; ok $? "the disconnect is counted"
gen=$(sed -n 's/^llm_generation_tokens_total{[^}]*} //p' "$E2E_TMP/m")
ok $([ "${gen:-999}" -lt 200 ]; echo $?) "generation stopped early ($gen tokens of 400 asked + 60 before)"
code=$(c -o /dev/null -w '%{http_code}' -d '{"prompt":"x","max_tokens":2}' "$BASE/v1/completions")
ok $([ "$code" = 200 ]; echo $?) "server keeps serving after the disconnect"
c -m 1 -d '{"prompt":"Hi","max_tokens":400}' "$BASE/v1/completions" >/dev/null 2>&1
wait_metric llm_num_requests_running 0 && grep -q ' POST /v1/completions 499 .*client-gone' "$E2E_TMP/llm.log"
ok $? "a non-streamed request whose client left is cancelled and logged as 499"

# SIGTERM during a stream: the stream finishes, the process exits 0
c -N -d '{"prompt":"Hi","max_tokens":30,"stream":true}' "$BASE/v1/completions" >"$E2E_TMP/term" &
T=$!
wait_metric llm_num_requests_running 1
stop_server
wait $T
tail -c 20 "$E2E_TMP/term" | grep -q 'data: \[DONE\]'; ok $? "SIGTERM during a stream: the stream completes"
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM during a stream: exit 0 (got $LLM_STATUS)"

# refuses a socket held by a live server; model load failure -> exit 1
start_server "$STUB" serve -m stub.gguf >/dev/null || ok 1 "server 3 starts"
timeout 10 "$STUB" serve -m stub.gguf --socket "$SOCK" 2>"$E2E_TMP/dup"; st=$?
ok $([ $st = 1 ] && grep -q 'another server' "$E2E_TMP/dup"; echo $?) "second server on a live socket refuses to start"
LLM_STUB_FAIL_LOAD=1 timeout 10 "$STUB" serve -m missing.gguf --socket "$E2E_TMP/x.sock" 2>"$E2E_TMP/load"; st=$?
ok $([ $st = 1 ] && grep -q 'cannot load model' "$E2E_TMP/load"; echo $?) "model load failure: message, exit 1"
timeout 10 "$STUB" serve 2>/dev/null; st=$?
ok $([ $st = 2 ]; echo $?) "no model: usage error exit 2"
timeout 10 "$STUB" serve --help | grep -q -- '--max-queue'; ok $? "--help lists the options"
stop_server

# ---- phase 3: TCP (with its warning) and spawn-fcgi (socket on fd 0)
unset LLM_STUB_DELAY_MS
TPORT=$(free_port)
"$STUB" serve -m stub.gguf --listen "127.0.0.1:$TPORT" >/dev/null 2>"$E2E_TMP/tcp.log" &
LLM_PID=$!; E2E_PIDS="$E2E_PIDS $LLM_PID"
i=0
while ! grep -q 'serving' "$E2E_TMP/tcp.log" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
grep -q 'WARNING.*FastCGI' "$E2E_TMP/tcp.log"; ok $? "--listen TCP prints a warning"
if start_nginx "127.0.0.1:$TPORT"; then
    out=$(c -d '{"prompt":"Hi","max_tokens":3,"temperature":0}' "$BASE/v1/completions")
    echo "$out" | grep -q '"text":"ce "'; st=$?
    ok $st "completion over TCP FastCGI"
    [ $st = 0 ] || { diag "reply: $out"; sed 's/^/# /' "$E2E_TMP/tcp.log" "$E2E_TMP/nginx/error.log" | tail -n 20; }
else
    ok 1 "nginx in front of TCP FastCGI"
fi
stop_server
if command -v spawn-fcgi >/dev/null; then
    SOCK=$E2E_TMP/spawn.sock
    spawn-fcgi -s "$SOCK" -M 0660 -n -- "$STUB" serve -m stub.gguf >/dev/null 2>"$E2E_TMP/llm.log" &
    LLM_PID=$!; E2E_PIDS="$E2E_PIDS $LLM_PID"
    if wait_socket "$SOCK" && start_nginx "unix:$SOCK"; then
        out=$(c -d '{"prompt":"Hi","max_tokens":3,"temperature":0}' "$BASE/v1/completions")
        echo "$out" | grep -q '"text":"ce "'; st=$?
    else
        st=1
    fi
    ok $st "under spawn-fcgi (listening socket on fd 0)"
    [ $st = 0 ] || { diag "reply: $out"; sed 's/^/# /' "$E2E_TMP/llm.log" "$E2E_TMP/nginx/error.log" | tail -n 20; }
    stop_server
    ok $([ "$LLM_STATUS" = 0 ]; echo $?) "spawn-fcgi: SIGTERM exit 0 (got $LLM_STATUS)"
fi

# options from the environment
LLM_API_KEY=sk-env LLM_SERVED_MODEL_NAME=envname,envalias LLM_MAX_BODY=1k \
    start_server "$STUB" serve -m stub.gguf || ok 1 "server from env starts"
code=$(c -o /dev/null -w '%{http_code}' "$BASE/v1/models")
out=$(c -H 'Authorization: Bearer sk-env' "$BASE/v1/models/envalias")
ok $([ "$code" = 401 ] && echo "$out" | grep -q '"id":"envalias"'; echo $?) "LLM_API_KEY and LLM_SERVED_MODEL_NAME from the environment"
code=$(c -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer sk-env' -d "{\"prompt\":\"$big\"}" "$BASE/v1/completions")
ok $([ "$code" = 413 ]; echo $?) "LLM_MAX_BODY from the environment"
stop_server

# the model's chat template (the stub takes it from LLM_STUB_CHAT_TEMPLATE)
LLM_STUB_CHAT_TEMPLATE="{% for m in messages %}{% if m.role == 'tool' %}{{ raise_exception('no tool turns here') }}{% endif %}[{{ m.role }}]{{ m.content }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}" \
    start_server "$STUB" serve -m stub.gguf || ok 1 "server with a chat template starts"
grep -q "chat: using the model's chat template" "$E2E_TMP/llm.log"; ok $? "the model's chat template is used (logged)"
toks=$(c -d '{"messages":[{"role":"user","content":"hello"}]}' "$BASE/tokenize" | sed -n 's/.*"tokens":\(\[[0-9,]*\]\).*/\1/p')
text=$(c -d "{\"tokens\":$toks}" "$BASE/detokenize")
ok $([ "$text" = '{"prompt":"[user]hello[assistant]"}' ]; echo $?) "chat prompt rendered by the template ($text)"
code=$(c -o "$E2E_TMP/t" -w '%{http_code}' -d '{"messages":[{"role":"tool","tool_call_id":"c1","content":"x"}]}' "$BASE/v1/chat/completions")
ok $([ "$code" = 400 ] && grep -q 'no tool turns here' "$E2E_TMP/t"; echo $?) "template raise_exception -> 400 with its message"
code=$(c -o /dev/null -w '%{http_code}' -d '{"messages":[{"role":"user","content":"x"}],"max_tokens":2}' "$BASE/v1/chat/completions")
ok $([ "$code" = 200 ]; echo $?) "chat through the template"
stop_server

# nginx-side key check (as in nginx/llm-fcgi.conf): llm-fcgi has no keys, a
# map on $http_authorization in nginx lets only the listed key through
awk '/^http \{/ { print; print "    map $http_authorization $llm_key_ok { default 0; \"Bearer sk-nginx\" 1; }"; next }
     /location \/ \{/ { print "        location = /health { fastcgi_pass llm_fcgi; fastcgi_param REQUEST_METHOD $request_method; fastcgi_param REQUEST_URI $request_uri; }"; print; print "            if ($llm_key_ok = 0) { add_header WWW-Authenticate Bearer always; return 401 \x27{\"error\":{\"message\":\"Invalid API key\",\"type\":\"authentication_error\",\"param\":null,\"code\":\"invalid_api_key\"}}\x27; }"; next }
     { print }' "$TOP_SRCDIR/nginx/llm-fcgi-run.conf.in" >"$E2E_TMP/auth.conf.in"
if E2E_NGINX_TEMPLATE=$E2E_TMP/auth.conf.in start_server "$STUB" serve -m stub.gguf; then
    code=$(c -o "$E2E_TMP/na" -w '%{http_code}' "$BASE/v1/models")
    ok $([ "$code" = 401 ] && grep -q invalid_api_key "$E2E_TMP/na"; echo $?) "nginx-side auth: no key -> 401 from nginx"
    code=$(c -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer sk-nginx' "$BASE/v1/models")
    ok $([ "$code" = 200 ]; echo $?) "nginx-side auth: the listed key passes to llm-fcgi"
else
    ok 1 "nginx-side auth setup"
fi
stop_server

# drain limit: a stream still running when --drain-timeout expires ends
# with finish_reason "abort" and [DONE]; the process still exits 0
export LLM_STUB_DELAY_MS=30
start_server "$STUB" serve -m stub.gguf --drain-timeout 1 || ok 1 "server 4 starts"
c -N -d '{"prompt":"Hi","max_tokens":400,"stream":true}' "$BASE/v1/completions" >"$E2E_TMP/drain" &
D=$!
wait_metric llm_num_requests_running 1
stop_server
wait $D
grep -q '"finish_reason":"abort"' "$E2E_TMP/drain" && tail -c 20 "$E2E_TMP/drain" | grep -q 'data: \[DONE\]'
ok $? "drain timeout: the stream ends with finish_reason abort and [DONE]"
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "drain timeout: exit 0 (got $LLM_STATUS)"
e2e_done
