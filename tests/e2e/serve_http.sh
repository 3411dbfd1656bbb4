#!/bin/sh
# serve_http.sh - end-to-end tests of the HTTP layer of `serve` through a
# real nginx, with the real engine on the fixture model stories260K.gguf
# (deterministic at temperature 0 or with a seed; it never emits EOS, so a
# long generation is simply a large max_tokens): the OpenAI SDK suite
# (api.test.mjs, four concurrent streams), then curl checks of auth, limits
# (413, 429), a client that disconnects mid-stream, SIGTERM during a stream,
# the drain limit, TCP, spawn-fcgi, options from the environment and
# --chat-template. Every wait is on a condition, every call has a timeout.
# Emits TAP.
. "$(dirname "$0")/lib.sh"

MODEL_FILE=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}/stories260K.gguf
need nginx node model binary openai fcgi_client
SRV="$LLM_FCGI"
M=$MODEL_FILE
# text of a non-streamed completion reply
text_of() { sed -n 's/.*"text":"\([^"]*\)".*/\1/p'; }

# ---- phase 1: auth on, 4 slots
start_server "$SRV" serve -m "$M" --served-model-name stories --served-model-name alias \
    --api-key sk-one --api-key sk-two --parallel 4 --threads 1 --ctx-size 1024 || { ok 1 "server starts"; e2e_done; exit 1; }
ok 0 "nginx + llm-fcgi start with stories260K"
[ "$(stat -c %a "$SOCK")" = 660 ]; ok $? "unix socket has mode 0660"

BASE=$BASE API_KEY=sk-two MODEL=stories E2E_CONCURRENCY=1 run_node "$TOP_SRCDIR/tests/e2e/api.test.mjs"

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
# the reference greedy text for the TCP / spawn-fcgi checks below
HI3=$(c -H 'Authorization: Bearer sk-one' -d '{"prompt":"Hi","max_tokens":3,"temperature":0}' "$BASE/v1/completions" | text_of)
ok $([ -n "$HI3" ]; echo $?) "greedy 3-token completion ('$HI3')"
out=$(c -H 'Authorization: Bearer sk-one' -d '{"prompt":"Hi!","max_tokens":10,"temperature":0}' "$BASE/v1/completions")
echo "$out" | grep -q '"finish_reason":"length"' && echo "$out" | grep -q '"completion_tokens":10'
ok $? "max_tokens ends the completion with finish_reason length"
c -N -H 'Authorization: Bearer sk-one' -d '{"prompt":"Hi","max_tokens":40,"stream":true,"seed":7}' "$BASE/v1/completions" >"$E2E_TMP/s1" &
wait $!
n=$(grep -c '^data: {"id"' "$E2E_TMP/s1")
ok $([ "$n" -ge 30 ] && [ "$n" -le 41 ] && tail -c 20 "$E2E_TMP/s1" | grep -q 'data: \[DONE\]'; echo $?) "40 tokens stream as one event per piece ($n events)"
if grep -q 'sk-one\|sk-two' "$E2E_TMP/llm.log"; then ok 1 "keys never logged"; else ok 0 "keys never logged"; fi
n=$(grep -c '^req [0-9a-f]\{32\} ' "$E2E_TMP/llm.log")
ok $([ "$n" -gt 20 ]; echo $?) "one log line per request with the request id ($n)"
stop_server
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM when idle: exit 0 (got $LLM_STATUS)"
[ ! -e "$SOCK" ]; ok $? "socket removed on exit"

# ---- phase 2: no auth, one slot, a queue of one, small body limit; long
# generations (stories260K never stops by itself) keep the slot busy
E2E_NGINX_MAX_BODY=1m start_server "$SRV" serve -m "$M" --parallel 1 --max-queue 1 --max-body 2000 \
    --ping-interval 1 --threads 1 --ctx-size 2048 || { ok 1 "server 2 starts"; e2e_done; exit 1; }
code=$(c -o /dev/null -w '%{http_code}' "$BASE/v1/models")
ok $([ "$code" = 200 ]; echo $?) "auth off: no key needed"
big=$(head -c 3000 /dev/zero | tr '\0' 'a')
c -o "$E2E_TMP/b" -w '%{http_code}' -d "{\"prompt\":\"$big\"}" "$BASE/v1/completions" >"$E2E_TMP/code"
[ "$(cat "$E2E_TMP/code")" = 413 ] && grep -q '"error"' "$E2E_TMP/b"; ok $? "body over --max-body -> 413 JSON"

# a stream whose FastCGI peer stops reading holds the only slot (its writes
# block once the socket buffer is full, ~200 kB of the ~2 MB this stream
# writes, and the scheduler skips a sequence whose channel is full), a second
# one waits in the queue and gets ": ping" comments meanwhile, a third is
# refused with 429; once the queued stream has had its ping the holder reads
# on. Nothing here depends on how fast the engine is.
"$FCGI_CLIENT" -d '{"prompt":"Hi","max_tokens":2040,"stream":true,"logprobs":5}' --stall-after 1 \
    --stalled "$E2E_TMP/stalled" --gate "$E2E_TMP/gate" "$SOCK" >"$E2E_TMP/long" &
LONG=$!
wait_metric llm_num_requests_running 1
c -N -m 120 -d '{"prompt":"Hi","max_tokens":3,"stream":true}' "$BASE/v1/completions" >"$E2E_TMP/queued" &
QUEUED=$!
wait_metric llm_num_requests_waiting 1
c -o "$E2E_TMP/q" -w '%{http_code}' -d '{"prompt":"x","max_tokens":2}' "$BASE/v1/completions" >"$E2E_TMP/code"
[ "$(cat "$E2E_TMP/code")" = 429 ] && grep -q '"rate_limit_error"' "$E2E_TMP/q"; ok $? "full queue -> 429 JSON"
wait_until grep -q '^: ping$' "$E2E_TMP/queued"
touch "$E2E_TMP/gate"
wait $LONG; st=$?
[ $st = 0 ] && tail -c 20 "$E2E_TMP/long" | grep -q 'data: \[DONE\]'; ok $? "the running stream is unaffected (its peer read on after a pause)"
wait $QUEUED
head -n 1 "$E2E_TMP/queued" | grep -q '^: ping$' && tail -c 20 "$E2E_TMP/queued" | grep -q 'data: \[DONE\]'
ok $? "a queued stream gets ': ping' comments while it waits, then its tokens"

# a client that disconnects mid-stream frees its slot at once
gen0=$(c "$BASE/metrics" | sed -n 's/^llm_generation_tokens_total{[^}]*} //p')
curl -s -N -m 120 -d '{"prompt":"Hi","max_tokens":2040,"stream":true}' "$BASE/v1/completions" >"$E2E_TMP/cut" 2>/dev/null &
CUT=$!
wait_metric llm_num_requests_running 1
# the client goes away once the stream has started
i=0; while ! grep -q '"text"' "$E2E_TMP/cut" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
kill $CUT 2>/dev/null; wait $CUT 2>/dev/null
wait_metric llm_num_requests_running 0; ok $? "after a disconnect /metrics shows no running sequence"
c "$BASE/metrics" >"$E2E_TMP/m"
grep -q '^llm_client_disconnects_total{[^}]*} 1$' "$E2E_TMP/m"; ok $? "the disconnect is counted"
gen=$(sed -n 's/^llm_generation_tokens_total{[^}]*} //p' "$E2E_TMP/m")
ok $([ $((${gen:-99999} - ${gen0:-0})) -lt 4000 ]; echo $?) "generation stopped early ($((${gen:-0} - ${gen0:-0})) tokens of 4000 asked)"
code=$(c -o /dev/null -w '%{http_code}' -d '{"prompt":"x","max_tokens":2}' "$BASE/v1/completions")
ok $([ "$code" = 200 ]; echo $?) "server keeps serving after the disconnect"
curl -s -m 120 -d '{"prompt":"Hi","max_tokens":2040}' "$BASE/v1/completions" >/dev/null 2>&1 &
CUT=$!
wait_metric llm_num_requests_running 1
kill $CUT 2>/dev/null; wait $CUT 2>/dev/null
wait_metric llm_num_requests_running 0 && grep -q ' POST /v1/completions 499 .*client-gone' "$E2E_TMP/llm.log"
ok $? "a non-streamed request whose client left is cancelled and logged as 499"

# SIGTERM during a stream: the stream finishes, the process exits 0
c -N -m 120 -d '{"prompt":"Hi","max_tokens":300,"stream":true}' "$BASE/v1/completions" >"$E2E_TMP/term" &
T=$!
wait_metric llm_num_requests_running 1
stop_server
wait $T
tail -c 20 "$E2E_TMP/term" | grep -q 'data: \[DONE\]'; ok $? "SIGTERM during a stream: the stream completes"
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM during a stream: exit 0 (got $LLM_STATUS)"

# refuses a socket held by a live server; model load failure -> exit 1
start_server "$SRV" serve -m "$M" --threads 1 >/dev/null || ok 1 "server 3 starts"
timeout 30 "$SRV" serve -m "$M" --socket "$SOCK" 2>"$E2E_TMP/dup"; st=$?
ok $([ $st = 1 ] && grep -q 'another server' "$E2E_TMP/dup"; echo $?) "second server on a live socket refuses to start"
timeout 10 "$SRV" serve -m "$E2E_TMP/missing.gguf" --socket "$E2E_TMP/x.sock" 2>"$E2E_TMP/load"; st=$?
ok $([ $st = 1 ] && grep -q 'cannot load model' "$E2E_TMP/load"; echo $?) "model load failure: message, exit 1"
printf 'GGUF not really' >"$E2E_TMP/bad.gguf"
timeout 10 "$SRV" serve -m "$E2E_TMP/bad.gguf" --socket "$E2E_TMP/y.sock" 2>"$E2E_TMP/load2"; st=$?
ok $([ $st = 1 ] && grep -q 'cannot load model' "$E2E_TMP/load2"; echo $?) "corrupt model file: message, exit 1"
timeout 10 "$SRV" serve -m "$M" --chat-template "$E2E_TMP/none.jinja" --socket "$E2E_TMP/z.sock" 2>"$E2E_TMP/load3"; st=$?
ok $([ $st = 1 ] && grep -q 'cannot read --chat-template' "$E2E_TMP/load3"; echo $?) "unreadable --chat-template: message, exit 1"
timeout 10 "$SRV" serve 2>/dev/null; st=$?
ok $([ $st = 2 ]; echo $?) "no model: usage error exit 2"
timeout 10 "$SRV" serve --help >"$E2E_TMP/help"
grep -q -- '--max-queue' "$E2E_TMP/help" && grep -q -- '--kv-cache-mb' "$E2E_TMP/help" && grep -q -- '--chat-template' "$E2E_TMP/help"
ok $? "--help lists the options"
stop_server

# ---- phase 3: TCP (with its warning) and spawn-fcgi (socket on fd 0)
TPORT=$(free_port)
"$SRV" serve -m "$M" --threads 1 --listen "127.0.0.1:$TPORT" >/dev/null 2>"$E2E_TMP/tcp.log" &
LLM_PID=$!; E2E_PIDS="$E2E_PIDS $LLM_PID"
i=0
while ! grep -q 'serving' "$E2E_TMP/tcp.log" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
grep -q 'WARNING.*FastCGI' "$E2E_TMP/tcp.log"; ok $? "--listen TCP prints a warning"
if start_nginx "127.0.0.1:$TPORT"; then
    out=$(c -d '{"prompt":"Hi","max_tokens":3,"temperature":0}' "$BASE/v1/completions")
    [ "$(printf '%s' "$out" | text_of)" = "$HI3" ]; st=$?
    ok $st "completion over TCP FastCGI (same greedy text)"
    [ $st = 0 ] || { diag "reply: $out"; sed 's/^/# /' "$E2E_TMP/tcp.log" "$E2E_TMP/nginx/error.log" | tail -n 20; }
else
    ok 1 "nginx in front of TCP FastCGI"
fi
stop_server
if command -v spawn-fcgi >/dev/null; then
    SOCK=$E2E_TMP/spawn.sock
    spawn-fcgi -s "$SOCK" -M 0660 -n -- "$SRV" serve -m "$M" --threads 1 >/dev/null 2>"$E2E_TMP/llm.log" &
    LLM_PID=$!; E2E_PIDS="$E2E_PIDS $LLM_PID"
    if wait_socket "$SOCK" && start_nginx "unix:$SOCK"; then
        out=$(c -d '{"prompt":"Hi","max_tokens":3,"temperature":0}' "$BASE/v1/completions")
        [ "$(printf '%s' "$out" | text_of)" = "$HI3" ]; st=$?
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
    start_server "$SRV" serve -m "$M" --threads 1 || ok 1 "server from env starts"
code=$(c -o /dev/null -w '%{http_code}' "$BASE/v1/models")
out=$(c -H 'Authorization: Bearer sk-env' "$BASE/v1/models/envalias")
ok $([ "$code" = 401 ] && echo "$out" | grep -q '"id":"envalias"'; echo $?) "LLM_API_KEY and LLM_SERVED_MODEL_NAME from the environment"
code=$(c -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer sk-env' -d "{\"prompt\":\"$big\"}" "$BASE/v1/completions")
ok $([ "$code" = 413 ]; echo $?) "LLM_MAX_BODY from the environment"
stop_server

# a chat template from --chat-template (a file) instead of the model's (it
# has none: ChatML); LLM_CHAT_TEMPLATE is the same option from the environment
printf '%s\n' "{% for m in messages %}{% if m.role == 'tool' %}{{ raise_exception('no tool turns here') }}{% endif %}[{{ m.role }}]{{ m.content }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}" >"$E2E_TMP/tmpl.jinja"
start_server "$SRV" serve -m "$M" --threads 1 || ok 1 "server without a template starts"
grep -q "the model has no chat template: using ChatML" "$E2E_TMP/llm.log"; ok $? "no template in the model: ChatML (logged)"
# no --served-model-name: the file's name, never the server's path
models=$(c "$BASE/v1/models")
reply=$(c -d '{"prompt":"Once","max_tokens":2,"model":"stories260K.gguf"}' "$BASE/v1/completions")
page=$(c "$BASE/metrics")
dir=$(dirname "$M")
ok $(echo "$models" | grep -q '"id":"stories260K.gguf"' && echo "$reply" | grep -q '"model":"stories260K.gguf"' &&
     ! printf '%s%s%s' "$models" "$reply" "$page" | grep -qF "$dir"; echo $?) \
    "the default served name is the model file's name: /v1/models, \"model\" and /metrics never show its directory"
code=$(c -o /dev/null -w '%{http_code}' -d "{\"prompt\":\"Once\",\"max_tokens\":1,\"model\":\"$M\"}" "$BASE/v1/completions")
ok $([ "$code" = 404 ]; echo $?) "the model's path is not a served name (404)"
toks=$(c -d '{"messages":[{"role":"user","content":"hello"}]}' "$BASE/tokenize" | sed -n 's/.*"tokens":\(\[[0-9,]*\]\).*/\1/p')
text=$(c -d "{\"tokens\":$toks}" "$BASE/detokenize")
printf '%s' "$text" | grep -q 'user\\nhello.*assistant\\n'; ok $? "ChatML rendering of a chat prompt"
stop_server
LLM_CHAT_TEMPLATE=$E2E_TMP/tmpl.jinja start_server "$SRV" serve -m "$M" --threads 1 || ok 1 "server with a chat template starts"
grep -q "chat: using the --chat-template file" "$E2E_TMP/llm.log"; ok $? "the --chat-template file is used (logged)"
toks=$(c -d '{"messages":[{"role":"user","content":"hello"}]}' "$BASE/tokenize" | sed -n 's/.*"tokens":\(\[[0-9,]*\]\).*/\1/p')
text=$(c -d "{\"tokens\":$toks}" "$BASE/detokenize")
printf "%s" "$text" | grep -q '"prompt":"[^"]*\[user\]hello\[assistant\]'; ok $? "chat prompt rendered by the template ($text)"
code=$(c -o "$E2E_TMP/t" -w '%{http_code}' -d '{"messages":[{"role":"tool","tool_call_id":"c1","content":"x"}]}' "$BASE/v1/chat/completions")
ok $([ "$code" = 400 ] && grep -q 'no tool turns here' "$E2E_TMP/t"; echo $?) "template raise_exception -> 400 with its message"
code=$(c -o /dev/null -w '%{http_code}' -d '{"messages":[{"role":"user","content":"x"}],"max_tokens":2}' "$BASE/v1/chat/completions")
ok $([ "$code" = 200 ]; echo $?) "chat through the template"
stop_server
printf '{%% for %%}' >"$E2E_TMP/broken.jinja"
timeout 60 "$LLM_FCGI" serve -m "$M" --threads 1 --socket "$E2E_TMP/broken.sock" \
    --chat-template "$E2E_TMP/broken.jinja" >/dev/null 2>"$E2E_TMP/broken.log"
ok $([ $? -eq 1 ] && grep -q "does not compile" "$E2E_TMP/broken.log"; echo $?) \
    "a --chat-template file that does not compile: refuses to start, exit 1, says why"

# nginx-side key check (as in nginx/llm-fcgi.conf): llm-fcgi has no keys, a
# map on $http_authorization in nginx lets only the listed key through
awk '/^http \{/ { print; print "    map $http_authorization $llm_key_ok { default 0; \"Bearer sk-nginx\" 1; }"; next }
     /location \/ \{/ { print "        location = /health { fastcgi_pass llm_fcgi; fastcgi_param REQUEST_METHOD $request_method; fastcgi_param REQUEST_URI $request_uri; }"; print; print "            if ($llm_key_ok = 0) { add_header WWW-Authenticate Bearer always; return 401 \x27{\"error\":{\"message\":\"Invalid API key\",\"type\":\"authentication_error\",\"param\":null,\"code\":\"invalid_api_key\"}}\x27; }"; next }
     { print }' "$TOP_SRCDIR/nginx/llm-fcgi-run.conf.in" >"$E2E_TMP/auth.conf.in"
if E2E_NGINX_TEMPLATE=$E2E_TMP/auth.conf.in start_server "$SRV" serve -m "$M" --threads 1; then
    code=$(c -o "$E2E_TMP/na" -w '%{http_code}' "$BASE/v1/models")
    ok $([ "$code" = 401 ] && grep -q invalid_api_key "$E2E_TMP/na"; echo $?) "nginx-side auth: no key -> 401 from nginx"
    code=$(c -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer sk-nginx' "$BASE/v1/models")
    ok $([ "$code" = 200 ]; echo $?) "nginx-side auth: the listed key passes to llm-fcgi"
else
    ok 1 "nginx-side auth setup"
fi
stop_server

# drain limit: a stream still running when --drain-timeout expires ends
# with finish_reason "abort" and [DONE]; the process still exits 0. The
# stream's FastCGI peer stops reading, so it is surely still running when
# the limit comes (whatever the engine's speed); it reads on once the
# server says it stops the in-flight requests.
start_server "$SRV" serve -m "$M" --threads 1 --ctx-size 2048 --drain-timeout 1 || ok 1 "server 4 starts"
"$FCGI_CLIENT" -d '{"prompt":"Hi","max_tokens":2040,"stream":true,"logprobs":5}' --stall-after 1 \
    --stalled "$E2E_TMP/dstalled" --gate "$E2E_TMP/dgate" "$SOCK" >"$E2E_TMP/drain" &
D=$!
wait_metric llm_num_requests_running 1
wait_until test -e "$E2E_TMP/dstalled"
kill -TERM "$LLM_PID"
wait_until grep -q 'drain limit reached: stopping 1 in-flight' "$E2E_TMP/llm.log"
ok $? "drain timeout: the server says it stops the in-flight request"
touch "$E2E_TMP/dgate"
wait $D
stop_server
grep -q '"finish_reason":"abort"' "$E2E_TMP/drain" && tail -c 20 "$E2E_TMP/drain" | grep -q 'data: \[DONE\]'
ok $? "drain timeout: the stream ends with finish_reason abort and [DONE]"
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "drain timeout: exit 0 (got $LLM_STATUS)"
e2e_done
