#!/bin/sh
# serve_edges.sh - hostile input and overload through the real nginx and
# llm-fcgi (stories260K.gguf):
# - bodies that are not UTF-8, not an object or null; integers beyond 64
#   bits, seeds, n against --max-n; long multi-byte values cut in messages;
#   a raw byte path; byte tokens echoed: every answer is valid UTF-8 and
#   names the field and its real range;
# - overload: with every slot and queue place held by peers that stopped
#   reading, a burst of requests gets 429 + Retry-After, every one of them;
#   the held requests then complete; many bursts leave resident memory
#   where the first left it.
# Every wait is on a condition, every call has a timeout. Emits TAP.
. "$(dirname "$0")/lib.sh"

MODEL_FILE=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}/stories260K.gguf
need nginx node model binary fcgi_client
CURL_TIMEOUT=60
# is_utf8 FILE: the whole file is valid UTF-8
is_utf8() { node -e 'new TextDecoder("utf-8",{fatal:true}).decode(require("fs").readFileSync(process.argv[1]))' "$1" 2>/dev/null; }
# post PATH BODY_FILE: status code; the answer in $E2E_TMP/a, headers in $E2E_TMP/h
post() { c -D "$E2E_TMP/h" -o "$E2E_TMP/a" -w '%{http_code}' --data-binary "@$2" "$BASE$1"; }
# expect NAME PATH BODY STATUS TEXT: the answer has STATUS, contains TEXT
# (fixed string) and is valid UTF-8; BODY may hold bytes as \0NNN (octal)
expect() {
    printf '%b' "$3" >"$E2E_TMP/body"
    code=$(post "$2" "$E2E_TMP/body")
    [ "$code" = "$4" ] && grep -qF -- "$5" "$E2E_TMP/a" && is_utf8 "$E2E_TMP/a"
    st=$?
    ok $st "$1 -> $4"
    [ $st = 0 ] || diag "got $code: $(head -c 300 "$E2E_TMP/a")"
}

start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --threads 1 --parallel 2 --max-queue 2 --max-n 4 --ctx-size 4096 ||
    { ok 1 "server starts"; e2e_done; exit 1; }

# ---- input
expect "model with an overlong NUL (C0 80)" /v1/completions '{"prompt":"x","model":"\0300\0200name"}' 400 \
    'not valid UTF-8 (byte 0xC0 at offset 23)'
expect "role 0xFF" /v1/chat/completions '{"messages":[{"role":"\0377","content":"x"}]}' 400 'not valid UTF-8'
expect "prompt FF FE with echo" /v1/completions '{"prompt":"\0377\0376","echo":true}' 400 'not valid UTF-8'
expect "invalid UTF-8 to /tokenize" /tokenize '{"prompt":"\0342\0202"}' 400 'not valid UTF-8'
expect "body null" /v1/completions 'null' 400 'must be a JSON object, got null'
expect "body an array" /v1/chat/completions '[{"role":"user"}]' 400 'got an array'
expect "max_tokens 2^64" /v1/completions '{"prompt":"x","max_tokens":18446744073709551616}' 400 \
    "'max_tokens' must be an integer from 1 to 2147483647, got 18446744073709551616"
expect "seed 2^64" /v1/completions '{"prompt":"x","seed":18446744073709551616}' 400 \
    'from -9223372036854775808 to 18446744073709551615 (64 bits), got 18446744073709551616'
expect "seed 2^64-1 is a seed" /v1/completions '{"prompt":"x","seed":18446744073709551615,"max_tokens":2}' 200 \
    '"finish_reason":"length"'
expect "n 0 with --max-n 4" /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"n":0}' 400 \
    "'n' must be an integer from 1 to 4, got 0"
expect "n 5 with --max-n 4" /v1/completions '{"prompt":"x","n":5}' 400 "from 1 to 4, got 5"
r=$(i=0; while [ $i -lt 300 ]; do printf '\303\251'; i=$((i + 1)); done)
expect "role of 300 x e-acute" /v1/chat/completions "{\"messages\":[{\"role\":\"$r\",\"content\":\"x\"}]}" 400 \
    'unknown role'
r=$(i=0; while [ $i -lt 120 ]; do printf '\360\237\230\200'; i=$((i + 1)); done)
expect "a model name of 120 emoji" /v1/completions "{\"prompt\":\"x\",\"model\":\"$r\"}" 404 'does not exist'
# echo of a prompt made of byte tokens (stories260K's <0xFF> is 258, <0xFE>
# 257, as in every llama SentencePiece vocabulary): U+FFFD, never the bytes
expect "echo of the byte tokens <0xFF><0xFE>" /v1/completions '{"prompt":[258,257],"echo":true,"max_tokens":1}' 200 \
    "$(printf '"text":"\357\277\275\357\277\275')"
# a raw 0xFF byte in the request line: nginx passes it, llm-fcgi quotes it repaired
node -e '
const s = require("net").connect(+process.argv[1], "127.0.0.1", () =>
  s.write(Buffer.concat([Buffer.from("GET /v1/x"), Buffer.from([0xff, 0xfe]), Buffer.from(" HTTP/1.0\r\n\r\n")])));
let d = Buffer.alloc(0); s.on("data", x => d = Buffer.concat([d, x])); s.on("end", () => process.stdout.write(d));
' "$PORT" >"$E2E_TMP/raw" 2>&1
grep -q '404' "$E2E_TMP/raw" && grep -qF "$(printf '/v1/x\357\277\275')" "$E2E_TMP/raw" && is_utf8 "$E2E_TMP/raw"
ok $? "a path with raw 0xFF 0xFE bytes: 404 quoting it with U+FFFD, valid UTF-8"

# ---- overload: 2 slots and 2 queue places held by peers that stopped
# reading (their writes block, the scheduler skips them), then a burst
hold() {
    "$FCGI_CLIENT" -d '{"prompt":"Hi","max_tokens":2000,"stream":true,"logprobs":5}' --stall-after 1 \
        --gate "$E2E_TMP/gate" -t 600 "$SOCK" >"$E2E_TMP/hold$1" &
    HOLDERS="$HOLDERS $!"
}
HOLDERS=""
hold 1; hold 2
wait_metric llm_num_requests_running 2
hold 3; hold 4
wait_metric llm_num_requests_waiting 2
ok $? "2 running and 2 waiting: the server is full"
node - "$BASE" 40 >"$E2E_TMP/burst" 2>&1 <<'EOF'
// 40 requests at once; prints one line per answer: status, Retry-After, error type
const [base, n] = [process.argv[2], +process.argv[3]];
const one = () => fetch(`${base}/v1/completions`, { method: 'POST', body: '{"prompt":"x","max_tokens":2}',
  headers: { 'content-type': 'application/json' } })
  .then(async r => { const j = await r.json().catch(() => ({})); return `${r.status} ${r.headers.get('retry-after')} ${j.error?.type}`; })
  .catch(e => `fail ${e.message}`);
const all = await Promise.all(Array.from({ length: n }, one));
console.log(all.join('\n'));
EOF
n429=$(grep -c '^429 1 rate_limit_error$' "$E2E_TMP/burst")
ok $([ "$n429" = 40 ]; echo $?) "a burst of 40 over --max-queue: 40 x 429 with Retry-After: 1 and rate_limit_error ($n429)"
[ "$n429" = 40 ] || diag "$(sort "$E2E_TMP/burst" | uniq -c | tr '\n' ';')"
touch "$E2E_TMP/gate"
good=0
for p in $HOLDERS; do wait "$p" && good=$((good + 1)); done
for i in 1 2 3 4; do tail -c 20 "$E2E_TMP/hold$i" | grep -q 'data: \[DONE\]' || good=0; done
ok $([ $good = 4 ]; echo $?) "the 4 accepted requests complete once their peers read ($good)"
wait_metric llm_num_requests_running 0

# ---- memory stays bounded: bursts of 200 requests (50 at once, more than
# the server takes: some are refused) leave resident memory where the
# first burst left it
rss() { sed -n 's/^VmRSS:[^0-9]*\([0-9]*\).*/\1/p' "/proc/$LLM_PID/status"; }
burst() { node - "$BASE" >>"$E2E_TMP/bursts" 2>&1 <<'EOF'
const base = process.argv[2];
let next = 0;
const bodies = ['{"prompt":"Once","max_tokens":8}', '{"prompt":"x","max_tokens":2,"stream":true}',
  '{"messages":[{"role":"user","content":"hi"}],"max_tokens":4}', 'null', '{"prompt":"x","n":3,"max_tokens":2}'];
const count = {};
async function worker() {
  while (next < 200) {
    const i = next++;
    const chat = bodies[i % 5].includes('messages');
    const r = await fetch(`${base}/v1/${chat ? 'chat/' : ''}completions`, { method: 'POST', body: bodies[i % 5],
      headers: { 'content-type': 'application/json' } }).catch(() => null);
    if (r) await r.text();
    const k = r ? r.status : 'fail';
    count[k] = (count[k] || 0) + 1;
  }
}
await Promise.all(Array.from({ length: 50 }, worker));
console.log(JSON.stringify(count));
EOF
}
burst
r1=$(rss)
i=0; while [ $i -lt 4 ]; do burst; i=$((i + 1)); done
r2=$(rss)
bad=$(grep -c 'fail\|"50[0-9]"' "$E2E_TMP/bursts")
ok $([ "$bad" = 0 ]; echo $?) "1000 requests in 5 bursts: only 200, 400 and 429 answers, no failure ($(tr '\n' ' ' <"$E2E_TMP/bursts"))"
if ldd "$LLM_FCGI" 2>/dev/null | grep -q libasan; then
    echo "ok - resident memory bounded over bursts # SKIP AddressSanitizer build (${r1} kB -> ${r2} kB)"
    E2E_N=$((E2E_N + 1))
else
    ok $([ $((${r2:-999999} - ${r1:-0})) -lt 4096 ]; echo $?) "resident memory bounded over 4 more bursts (${r1} kB -> ${r2} kB)"
fi
stop_server
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM: exit 0 (got $LLM_STATUS)"
e2e_done
