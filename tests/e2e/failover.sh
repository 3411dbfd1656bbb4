#!/bin/sh
# failover.sh - dying backends: two llm-fcgi processes, each under
# daemontools' `supervise`, behind the shipped production site
# (nginx/llm-fcgi.conf: least_conn upstream, fastcgi_next_upstream,
# max_fails/fail_timeout, the JSON 503 page), with the real engine on
# stories260K.gguf. One backend is killed with SIGKILL while
# - a stream runs on each backend (its reader paused, so it is surely still
#   running: see the sndbuf note below),
# - a non-streamed request waits in the victim's queue (not started),
# and then: the victim's stream ends early for its client (no [DONE]), the
# survivor's stream completes, the waiting request is re-sent by nginx to
# the survivor and answered 200, new requests all go to the survivor, the
# victim restarted by supervise rejoins, and with both down nginx answers
# a JSON 503 with Retry-After. Every wait is on a condition. Emits TAP.
. "$(dirname "$0")/lib.sh"

MODEL_FILE=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}/stories260K.gguf
need nginx node model binary supervise svc svstat fcgi_client
M=$MODEL_FILE
CURL_TIMEOUT=300 # sanitizer builds on a busy machine are slow

# service DIR for backend NAME (a or b): supervise runs DIR/run and starts
# it again a second after it dies
service() {
    mkdir -p "$E2E_TMP/svc/$1"
    cat >"$E2E_TMP/svc/$1/run" <<EOF
#!/bin/sh
exec "$LLM_FCGI" serve -m "$M" --socket "$E2E_TMP/$1.sock" --threads 1 --parallel 1 --max-queue 4 \
    --ctx-size 2048 2>>"$E2E_TMP/$1.log"
EOF
    chmod +x "$E2E_TMP/svc/$1/run"
    supervise "$E2E_TMP/svc/$1" >>"$E2E_TMP/supervise-$1.log" 2>&1 &
    E2E_PIDS="$E2E_PIDS $!"
    at_exit "svc -dx '$E2E_TMP/svc/$1'"
}
pid_of() { svstat "$E2E_TMP/svc/$1" 2>/dev/null | sed -n 's/.*up (pid \([0-9]*\)).*/\1/p'; }
# a backend's own counters, straight over FastCGI (not through nginx)
direct_metric() { "$FCGI_CLIENT" -u /metrics -t 10 "$E2E_TMP/$1.sock" 2>/dev/null | sed -n "s/^$2{[^}]*} //p" | head -n 1; }
served() { direct_metric "$1" llm_time_to_first_token_seconds_count; } # generations started by backend $1
answers() { [ -S "$E2E_TMP/$1.sock" ] && "$FCGI_CLIENT" -u /health -t 5 "$E2E_TMP/$1.sock" 2>/dev/null | grep -q '"ok"'; }
comp() { c -o /dev/null -w '%{http_code}' -d '{"prompt":"Hi","max_tokens":3}' "$BASE/v1/completions"; }

service a
service b
wait_until answers a && wait_until answers b
ok $? "two backends up under supervise"
# nginx's send buffer to each client is kept small (the shipped site leaves
# the kernel's default, which grows to 4 MB): a client that stops reading
# then stops its stream within ~0.3 MB, far less than the ~1.5 MB it writes
E2E_SITE_LISTEN_OPTS="sndbuf=32k" start_site "$E2E_TMP/a.sock" "$E2E_TMP/b.sock" ||
    { ok 1 "nginx with the shipped site starts"; e2e_done; exit 1; }
n=0; for i in 1 2 3 4; do [ "$(comp)" = 200 ] && n=$((n + 1)); done
ok $([ $n = 4 ]; echo $?) "4 completions through the shipped site"

# ---- in flight at the kill: a stream on each backend, one request queued
LONG='{"prompt":"Hi","max_tokens":2000,"stream":true,"logprobs":5}'
node "$TOP_SRCDIR/tests/e2e/gated_get.mjs" "$BASE/v1/completions" "$LONG" "$E2E_TMP/s1" "$E2E_TMP/gate" \
    "$E2E_TMP/s1.started" 2>"$E2E_TMP/s1.err" &
S1=$!
wait_until test -e "$E2E_TMP/s1.started"
node "$TOP_SRCDIR/tests/e2e/gated_get.mjs" "$BASE/v1/completions" "$LONG" "$E2E_TMP/s2" "$E2E_TMP/gate" \
    "$E2E_TMP/s2.started" 2>"$E2E_TMP/s2.err" &
S2=$!
wait_until test -e "$E2E_TMP/s2.started"
ra=$(direct_metric a llm_num_requests_running); rb=$(direct_metric b llm_num_requests_running)
ok $([ "$ra" = 1 ] && [ "$rb" = 1 ]; echo $?) "one stream running on each backend (least_conn)"
# both slots are taken: the next request waits in a queue; its backend is
# the victim
c -d '{"prompt":"Hello","max_tokens":5,"temperature":0}' "$BASE/v1/completions" >"$E2E_TMP/queued" &
Q=$!
victim=
wait_until sh -c "[ \"\$(\"$FCGI_CLIENT\" -u /metrics -t 5 '$E2E_TMP/a.sock' | grep -c '^llm_num_requests_waiting{.*} 1')\" = 1 ] ||
                  [ \"\$(\"$FCGI_CLIENT\" -u /metrics -t 5 '$E2E_TMP/b.sock' | grep -c '^llm_num_requests_waiting{.*} 1')\" = 1 ]"
if [ "$(direct_metric a llm_num_requests_waiting)" = 1 ]; then victim=a; survivor=b; else victim=b; survivor=a; fi
diag "the queued request waits on backend $victim: it is the victim"
before=$(served "$survivor")
svc -o "$E2E_TMP/svc/$victim" # once: do not restart it yet
vpid=$(pid_of "$victim")
kill -9 "$vpid"
wait_until sh -c "! kill -0 $vpid 2>/dev/null"
ok $? "backend $victim (pid $vpid) killed with SIGKILL"
touch "$E2E_TMP/gate" # the paused readers read on
wait $S1; st1=$?
wait $S2; st2=$?
done1=0; done2=0
grep -q 'data: \[DONE\]' "$E2E_TMP/s1" && done1=1
grep -q 'data: \[DONE\]' "$E2E_TMP/s2" && done2=1
ok $([ $((done1 + done2)) = 1 ]; echo $?) "exactly one stream completes with [DONE] (the survivor's)"
if [ $done1 = 1 ]; then cut=s2; cst=$st2; else cut=s1; cst=$st1; fi
grep -q '^HTTP 200' "$E2E_TMP/$cut" && grep -q '^data: {' "$E2E_TMP/$cut" && ! grep -q '"finish_reason":"length"' "$E2E_TMP/$cut"
ok $? "the victim's stream: 200, some tokens, then it ends without a finish_reason or [DONE]"
# nginx 1.22 ends such a response with its final chunk (the HTTP exchange
# looks complete, exit 0 here); what tells the client is the missing
# finish_reason and [DONE] (docs/reliability.md)
diag "the cut stream's HTTP response $([ "$cst" = 0 ] && echo 'ended normally' || echo 'broke off') ($(cat "$E2E_TMP/$cut.err"))"
wait $Q
grep -q '"finish_reason":"length"' "$E2E_TMP/queued"
ok $? "the request queued on the victim was re-sent by nginx to the survivor and answered"

# ---- requests that arrive while the victim is down all go to the survivor
n=0; for i in 1 2 3 4 5 6; do [ "$(comp)" = 200 ] && n=$((n + 1)); done
ok $([ $n = 6 ]; echo $?) "6 of 6 new requests answered while backend $victim is down"
after=$(served "$survivor")
ok $([ $((after - before)) -ge 7 ]; echo $?) "all of them (and the re-sent one) by backend $survivor ($before -> $after)"
grep -q "connect() to unix:$E2E_TMP/$victim.sock failed" "$E2E_TMP/site/error.log" ||
    grep -q "prematurely closed" "$E2E_TMP/site/error.log"
ok $? "nginx logged the dead backend"

# ---- the supervisor restarts the victim; it rejoins
svc -u "$E2E_TMP/svc/$victim"
wait_until answers "$victim"
ok $? "supervise starts backend $victim again (pid $(pid_of "$victim"))"
# a second SIGKILL, supervise in its normal mode: it restarts by itself
vpid=$(pid_of "$victim")
t_kill=$(date +%s.%N)
kill -9 "$vpid"
wait_until sh -c "p=\$(svstat '$E2E_TMP/svc/$victim' | sed -n 's/.*up (pid \([0-9]*\)).*/\1/p'); [ -n \"\$p\" ] && [ \"\$p\" != $vpid ]"
wait_until answers "$victim"
ok $? "after another SIGKILL supervise restarts it by itself (pid $vpid -> $(pid_of "$victim"))"
t_up=$(date +%s.%N)
# nginx tries it again once fail_timeout (5 s in the shipped site) is over
rejoined() { comp >/dev/null; [ "$(served "$victim")" -gt 0 ] 2>/dev/null; }
i=0; while ! rejoined && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
ok $([ "$(served "$victim")" -gt 0 ] 2>/dev/null; echo $?) "backend $victim rejoins: nginx sends it requests again ($(served "$victim") answered)"
diag "$(echo "$t_kill $t_up $(date +%s.%N)" | awk '{printf "figures (not checked): answering again %.1f s after SIGKILL, served by nginx again %.1f s after that", $2 - $1, $3 - $2}')"

# ---- both down: nginx's own answer is an OpenAI-shaped 503
svc -d "$E2E_TMP/svc/a" "$E2E_TMP/svc/b"
wait_until sh -c "! '$FCGI_CLIENT' -u /health -t 2 '$E2E_TMP/a.sock' >/dev/null 2>&1 && ! '$FCGI_CLIENT' -u /health -t 2 '$E2E_TMP/b.sock' >/dev/null 2>&1"
code=$(c -D "$E2E_TMP/h" -o "$E2E_TMP/down" -w '%{http_code}' -d '{"prompt":"Hi"}' "$BASE/v1/completions")
ok $([ "$code" = 503 ] && grep -q '"code":"backend_unavailable"' "$E2E_TMP/down" && grep -qi '^Retry-After: 2' "$E2E_TMP/h"; echo $?) \
    "every backend down: 503 JSON (backend_unavailable) with Retry-After (got $code)"
e2e_done
