#!/bin/sh
# lighttpd.sh - the shipped lighttpd example (nginx/lighttpd-llm-fcgi.conf)
# in front of the real llm-fcgi: health, a completion, and a stream that
# arrives event by event (server.stream-response-body). TAP.
. "$(dirname "$0")/lib.sh"
need lighttpd
M=${LLM_MODELS_DIR:?}/stories260K.gguf
PORT=$(free_port)
SOCK=$E2E_TMP/llm.sock
"$LLM_FCGI" serve -m "$M" --threads 1 --socket "$SOCK" >"$E2E_TMP/llm.out" 2>"$E2E_TMP/llm.log" &
LLM_PID=$!
E2E_PIDS="$E2E_PIDS $LLM_PID"
wait_socket "$SOCK"; ok $? "llm-fcgi listens on its socket"

sed "s|/run/llm-fcgi/llm-fcgi.sock|$SOCK|" "$TOP_SRCDIR/nginx/lighttpd-llm-fcgi.conf" >"$E2E_TMP/site.conf"
cat >"$E2E_TMP/lighttpd.conf" <<CONF
server.document-root = "$E2E_TMP"
server.port = $PORT
server.bind = "127.0.0.1"
server.errorlog = "$E2E_TMP/lighttpd.log"
include "$E2E_TMP/site.conf"
CONF
timeout 10 lighttpd -tt -f "$E2E_TMP/lighttpd.conf" >"$E2E_TMP/lt-check" 2>&1; ok $? "the example passes lighttpd -tt"
lighttpd -D -f "$E2E_TMP/lighttpd.conf" 2>>"$E2E_TMP/lighttpd.log" &
LT_PID=$!
E2E_PIDS="$E2E_PIDS $LT_PID"
BASE=http://127.0.0.1:$PORT
i=0
until curl -s -m 2 -o /dev/null "$BASE/health" || [ $i -gt 100 ]; do sleep 0.1; i=$((i + 1)); done

out=$(curl -s -m 30 "$BASE/health")
ok $([ "$out" = '{"status":"ok"}' ]; echo $?) "GET /health through lighttpd ($out)"
out=$(curl -s -m 60 "$BASE/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt":"Once upon a time","max_tokens":8,"temperature":0}')
printf '%s' "$out" | grep -q '"text":", there was a little girl"'; ok $? "a greedy completion through lighttpd"
# a long stream: its first events must reach the client while the
# generation is still running (lighttpd would otherwise buffer the whole
# response): checked on /metrics, not with timings
curl -sN -m 120 "$BASE/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt":"Once upon a time","max_tokens":1500,"temperature":0,"stream":true}' >"$E2E_TMP/stream" 2>&1 &
CURL_PID=$!
i=0
until grep -q '^data: {' "$E2E_TMP/stream" 2>/dev/null || [ $i -gt 600 ]; do sleep 0.05; i=$((i + 1)); done
running=$(curl -s -m 10 "$BASE/metrics" | sed -n 's/^llm_num_requests_running{[^}]*} \([0-9]*\).*/\1/p')
ok $([ "$running" = 1 ]; echo $?) "the first events arrive while the generation still runs (running=$running)"
wait "$CURL_PID"
n=$(grep -c '^data: {' "$E2E_TMP/stream")
ok $([ "$n" -ge 100 ] && tail -n 2 "$E2E_TMP/stream" | grep -q '^data: \[DONE\]'; echo $?) "streamed completion: $n events and [DONE]"
grep -qi "x-accel-buffering" "$E2E_TMP/stream"; ok $([ $? -ne 0 ]; echo $?) "no headers mixed into the body"
kill "$LT_PID" 2>/dev/null
kill -TERM "$LLM_PID" 2>/dev/null; wait "$LLM_PID" 2>/dev/null
ok $? "llm-fcgi stops cleanly"
echo "1..$E2E_N"
[ "$E2E_FAILED" -eq 0 ]
