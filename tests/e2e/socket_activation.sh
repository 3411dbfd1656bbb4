#!/bin/sh
# socket_activation.sh - llm-fcgi on a listening socket it did not bind, as
# the shipped systemd units run it (debian/, systemd/): systemd's own
# systemd-socket-activate (LISTEN_FDS/LISTEN_PID, socket on fd 3, the
# process started by nginx's first connection), and tests/tools/sock_activate
# (socket on fd 0 as StandardInput=socket gives it, held across a restart):
# a request made while llm-fcgi is down waits in the socket's backlog and is
# answered by the next process, so a restart loses no connection (an
# inherited socket is never shut down). Emits TAP.
. "$(dirname "$0")/lib.sh"

MODEL_FILE=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}/stories260K.gguf
need nginx node curl model binary systemd-socket-activate ss
ACT=$(dirname "$LLM_FCGI")/tests/tools/sock_activate
[ -x "$ACT" ] || bail "no sock_activate helper ($ACT)"
SOCK=$E2E_TMP/llm.sock
REQ='{"prompt":"Once upon a time","max_tokens":8,"temperature":0}'
completion() { c -o "$E2E_TMP/$1" -w '%{http_code}' "$BASE/v1/completions" -H 'Content-Type: application/json' -d "$REQ"; }

# ---- systemd-socket-activate: started by the first connection, fd 3
systemd-socket-activate -l "$SOCK" "$LLM_FCGI" serve -m "$MODEL_FILE" --threads 1 \
    >/dev/null 2>"$E2E_TMP/llm.log" &
LLM_PID=$!
E2E_PIDS="$E2E_PIDS $LLM_PID"
wait_until test -S "$SOCK"
grep -q 'serving' "$E2E_TMP/llm.log"
ok $([ $? -ne 0 ]; echo $?) "systemd-socket-activate holds the socket; llm-fcgi not started before a connection"
start_nginx "unix:$SOCK"; st=$?
ok $st "nginx's first request starts llm-fcgi through the socket and gets /health 200"
code=$(completion a1)
ok $([ "$code" = 200 ] && grep -q '"text_completion"' "$E2E_TMP/a1"; echo $?) "completion through the activated socket ($code)"
grep -q 'on fd 3 (systemd)' "$E2E_TMP/llm.log"
ok $? "llm-fcgi took the socket from LISTEN_FDS (fd 3) and unset LISTEN_*"
stop_server
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM: clean exit 0 with an inherited socket ($LLM_STATUS)"

# ---- sock_activate --fd0: restart without losing a connection
rm -f "$SOCK"
"$ACT" --fd0 --pid-file "$E2E_TMP/pid" --restart-gate "$E2E_TMP/gate" "$SOCK" \
    "$LLM_FCGI" serve -m "$MODEL_FILE" --threads 1 >/dev/null 2>"$E2E_TMP/act.log" &
ACT_PID=$!
E2E_PIDS="$E2E_PIDS $ACT_PID"
wait_until test -S "$SOCK"
LLM_PID=$ACT_PID # stop_server stops the holder, which stops llm-fcgi
start_nginx "unix:$SOCK"; st=$?
ok $st "socket on fd 0 (StandardInput=socket): nginx gets /health 200"
[ "$(stat -c %a "$SOCK")" = 660 ]; ok $? "the holder's socket has mode 0660"
code=$(completion b1)
ok $([ "$code" = 200 ]; echo $?) "completion before the restart ($code)"
grep -q 'on fd 0' "$E2E_TMP/act.log"; ok $? "llm-fcgi serves the socket on fd 0"

kill -TERM "$(cat "$E2E_TMP/pid")"
wait_until grep -q 'sock_activate: exited' "$E2E_TMP/act.log"
grep -q 'sock_activate: exited 0' "$E2E_TMP/act.log"
ok $? "SIGTERM to llm-fcgi: exit 0, the holder keeps the socket"
# a request while no llm-fcgi runs: nginx connects, the connection waits
completion b2 >"$E2E_TMP/b2.code" &
CURL_PID=$!
backlog() { [ "$(ss -xlnH | awk -v p="$SOCK" '$5 == p {print $3}')" -ge 1 ] 2>/dev/null; }
wait_until backlog
ok $? "the request waits in the socket's backlog while llm-fcgi is down"
touch "$E2E_TMP/gate"
wait "$CURL_PID"
code=$(cat "$E2E_TMP/b2.code")
text_of() { sed -n 's/.*"text":"\([^"]*\)".*/\1/p' "$E2E_TMP/$1"; }
ok $([ "$code" = 200 ] && [ -n "$(text_of b2)" ] && [ "$(text_of b1)" = "$(text_of b2)" ]; echo $?) \
    "the restarted llm-fcgi answers the waiting request, same text ($code)"
[ "$(grep -c 'serving' "$E2E_TMP/act.log")" = 2 ]; ok $? "llm-fcgi was started twice on the same socket"
stop_server
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "holder and llm-fcgi stop cleanly ($LLM_STATUS)"

# ---- LISTEN_FDS for us but fd 3 is no socket: a clear error
sh -c 'exec 3</dev/null; LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" serve -m "$1" --threads 1' \
    "$LLM_FCGI" "$MODEL_FILE" >/dev/null 2>"$E2E_TMP/bad.log"; st=$?
ok $([ $st = 1 ] && grep -q 'fd 3 is not a listening stream socket' "$E2E_TMP/bad.log"; echo $?) \
    "LISTEN_FDS with fd 3 not a socket: exit 1 and a clear message ($st)"
e2e_done
