#!/bin/sh
# fcgi_fuzz.sh - hostile peers on llm-fcgi's FastCGI socket (no nginx in
# between), with the real engine on stories260K.gguf and nginx in front for
# the ordinary requests that must keep working:
# - the raw-socket fuzzer (tests/tools/fcgi_fuzz.c): FCGI_FUZZ_CASES cases
#   (default 1500, a few seconds; 30000 when llm-fcgi is an
#   AddressSanitizer build, i.e. configured with --enable-sanitizers);
# - the records that used to abort the process inside libfcgi;
# - 300 connections that never finish their request (slowloris) while
#   requests through nginx are answered;
# - --io-timeout: a peer that stops sending, and one that stops reading a
#   stream (its slot is freed while it still does not read);
# - no sanitizer report in the server's log, counters in /metrics.
# Every wait is on a condition, every call has a timeout. Emits TAP.
. "$(dirname "$0")/lib.sh"

MODEL_FILE=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}/stories260K.gguf
FUZZ=${FCGI_FUZZ:-$(dirname "$LLM_FCGI")/tests/tools/fcgi_fuzz}
need nginx node model binary fcgi_client
[ -x "$FUZZ" ] || bail "no fuzzer (FCGI_FUZZ=$FUZZ)"
asan=0
ldd "$LLM_FCGI" 2>/dev/null | grep -q libasan && asan=1
cases=${FCGI_FUZZ_CASES:-$([ $asan = 1 ] && echo 30000 || echo 1500)}
metric() { c "$BASE/metrics" | sed -n "s/^$1 //p"; }
completes() { c -d '{"prompt":"Hi","max_tokens":2}' "$BASE/v1/completions" | grep -q '"finish_reason":"length"'; }
no_sanitizer_report() { ! grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$E2E_TMP/llm.log"; }

# a small server: 2 slots, a queue of 2, 8 workers
start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --threads 1 --parallel 2 --max-queue 2 --ctx-size 2048 ||
    { ok 1 "server starts"; e2e_done; exit 1; }

# ---- the fuzzer
diag "fuzzing with $cases cases (AddressSanitizer build: $asan)"
TAP_TIMEOUT=1800 run_tap "$FUZZ" --cases "$cases" --stalled 12 --seed "${FCGI_FUZZ_SEED:-0x2545f4914f6cdd1d}" "$SOCK"
kill -0 "$LLM_PID"; ok $? "llm-fcgi is still running after $cases fuzz cases"
completes; ok $? "a completion through nginx after the fuzzing"
n=$(metric 'llm_fcgi_dropped_total{reason="protocol"}')
ok $([ "${n:-0}" -gt 0 ]; echo $?) "hostile connections dropped and counted in /metrics ($n)"

# ---- the records that aborted the process inside libfcgi (Malloc assert:
# name/value lengths near 2^31 in PARAMS and in GET_VALUES), and a
# GET_VALUES that overflowed its 64-byte answer buffer
node - "$SOCK" <<'EOF' >"$E2E_TMP/crafted" 2>&1
const net = require('net');
const rec = (type, id, content) => {
  const pad = (8 - content.length % 8) % 8;
  const h = Buffer.from([1, type, id >> 8, id & 255, content.length >> 8, content.length & 255, pad, 0]);
  return Buffer.concat([h, content, Buffer.alloc(pad)]);
};
const huge = Buffer.from([0xff, 0xff, 0xff, 0xfe, 0xff, 0xff, 0xff, 0xfe, 97, 98, 99]);
const names = Buffer.concat(Array.from({ length: 40 }, () => Buffer.from('\x0e\x00FCGI_MAX_CONNS', 'latin1')));
const cases = [
  Buffer.concat([rec(1, 1, Buffer.from([0, 1, 0, 0, 0, 0, 0, 0])), rec(4, 1, huge), rec(4, 1, Buffer.alloc(0))]),
  rec(9, 0, huge),
  rec(9, 0, names),
];
let left = cases.length;
for (const bytes of cases) {
  const s = net.connect(process.argv[2], () => s.end(bytes));
  let got = Buffer.alloc(0);
  s.on('data', d => { got = Buffer.concat([got, d]); });
  s.on('close', () => { console.log(`closed after ${got.length} bytes of answer`); if (!--left) process.exit(0); });
  s.on('error', e => console.log('error', e.code));
}
setTimeout(() => { console.log('timeout'); process.exit(1); }, 20000);
EOF
st=$?
kill -0 "$LLM_PID" && [ $st = 0 ]; ok $? "records that abort libfcgi (2^31 lengths, GET_VALUES overflow): still running"
grep -q 'closed after 32 bytes' "$E2E_TMP/crafted"; ok $? "GET_VALUES with 40 repeats: one bounded answer"
completes; ok $? "a completion through nginx after the crafted records"

# ---- slowloris: 300 connections that send half a request and stay; the
# guard reads them without a worker each, so nginx's requests still pass
node - "$SOCK" 300 <<'EOF' >"$E2E_TMP/slow.log" 2>&1 &
const net = require('net');
const n = +process.argv[3];
let open = 0;
for (let i = 0; i < n; i++) {
  const s = net.connect(process.argv[2], () => {
    s.write(Buffer.from([1, 1, 0, 1, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 4, 0, 1, 0, 200, 0, 0, 14]));
    if (++open === n) console.log('all open');
  });
  s.on('error', () => {});
}
setTimeout(() => process.exit(0), 120000);
EOF
SLOW=$!
E2E_PIDS="$E2E_PIDS $SLOW"
wait_until grep -q 'all open' "$E2E_TMP/slow.log"
i=0; good=0
while [ $i -lt 10 ]; do completes && good=$((good + 1)); i=$((i + 1)); done
ok $([ $good = 10 ]; echo $?) "300 peers stuck in the middle of their request: 10 of 10 completions through nginx"
kill $SLOW 2>/dev/null; wait $SLOW 2>/dev/null
stop_server
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM after the fuzzing: exit 0 (got $LLM_STATUS)"
no_sanitizer_report; ok $? "no sanitizer report in the server log"

# ---- --io-timeout: peers that stall are dropped and their slots freed
start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --threads 1 --parallel 1 --ctx-size 2048 --io-timeout 1 ||
    { ok 1 "server with --io-timeout 1 starts"; e2e_done; exit 1; }
# a peer that sends half a request and then nothing
node -e 'const s=require("net").connect(process.argv[1],()=>s.write(Buffer.from([1,1,0,1,0,8,0,0])));s.on("close",()=>{console.log("closed by the server");process.exit(0)});setTimeout(()=>process.exit(1),30000)' \
    "$SOCK" >"$E2E_TMP/silent" 2>&1
grep -q 'closed by the server' "$E2E_TMP/silent" && [ "$(metric 'llm_fcgi_dropped_total{reason="timeout"}')" = 1 ]
ok $? "a peer silent in the middle of its request is dropped after --io-timeout (counted as timeout)"
# a peer that stops reading a long stream: its slot is freed although it
# never reads again (its writes time out), and the next request runs
"$FCGI_CLIENT" -d '{"prompt":"Hi","max_tokens":2040,"stream":true,"logprobs":5}' --stall-after 1 \
    --stalled "$E2E_TMP/stalled" -t 60 "$SOCK" >"$E2E_TMP/held" &
HELD=$!
E2E_PIDS="$E2E_PIDS $HELD"
wait_metric llm_num_requests_running 1
wait_until test -e "$E2E_TMP/stalled"
wait_metric llm_num_requests_running 0; ok $? "a peer that stops reading loses its slot after --io-timeout"
completes; ok $? "the next request runs while that peer is still connected"
kill -0 $HELD; ok $? "(the stalled peer was still connected)"
kill $HELD 2>/dev/null; wait $HELD 2>/dev/null
grep -q 'POST /v1/completions 200 .*client-gone' "$E2E_TMP/llm.log"; ok $? "its request is logged as client-gone"
stop_server
no_sanitizer_report; ok $? "no sanitizer report in the server log"
e2e_done
