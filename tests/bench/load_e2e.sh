#!/bin/sh
# load_e2e.sh - tests of the load generator (tests/bench/load.mjs, load.sh)
# against nginx + llm-fcgi with the real engine on stories260K.gguf (it never
# emits EOS, so every request generates exactly max_tokens):
# the unit tests of load_lib.mjs, a small run whose results.json / plot.svg
# are checked, a wrong key, a refused non-loopback URL, the per-level time
# limit, and the --serve wrapper. Checks counts and shapes, never timings.
# Emits TAP.
. "$(dirname "$0")/../e2e/lib.sh"

LLM_FCGI=${LLM_FCGI:-$TOP_SRCDIR/build/llm-fcgi}
SRV=$LLM_FCGI
MODEL_FILE=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}/stories260K.gguf
M=$MODEL_FILE
LOAD=$TOP_SRCDIR/tests/bench/load.mjs
need node nginx binary model

TAP_NO_PLAN=1 run_node "$TOP_SRCDIR/tests/bench/load_lib.test.mjs"


# jq-free JSON checks: jcheck FILE 'JS expression over r' NAME
jcheck() {
    node -e 'const r=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));
             process.exit((0, eval(process.argv[2])) ? 0 : 1)' "$1" "$2" 2>>"$E2E_TMP/jcheck.err"
    ok $? "$3"
}

start_server "$SRV" serve -m "$M" --served-model-name stories --api-key sk-load --parallel 4 --threads 1 \
    --ctx-size 2048 || { ok 1 "server starts"; e2e_done; exit 1; }
ok 0 "nginx + llm-fcgi start with stories260K"
PORT=${BASE##*:}

# ---- a small run over two levels, through the name "localhost"
out=$E2E_TMP/run1
timeout 120 node "$LOAD" --url "http://localhost:$PORT/v1" --api-key sk-load --concurrency 1,3 --requests 5 \
    --max-tokens 6 --prompt-tokens 30 --shared-prefix 10 --out "$out" --raw >"$E2E_TMP/run1.out" 2>"$E2E_TMP/run1.err"
st=$?
ok $([ $st = 0 ]; echo $?) "run over C=1,3 exits 0 (got $st)"
[ $st = 0 ] || sed 's/^/# /' "$E2E_TMP/run1.err"
jcheck "$out/results.json" 'r.levels.length===2 && r.levels[0].concurrency===1 && r.levels[1].concurrency===3' "results.json has both levels"
jcheck "$out/results.json" 'r.levels.every(l=>l.requests===5 && l.ok===5 && l.errors===0)' "5 requests per level, all ok"
jcheck "$out/results.json" 'r.levels.every(l=>l.completion_tokens>=5 && l.completion_tokens<=30 && l.tokens_per_s>0)' "completion tokens come from usage (<= max_tokens each)"
jcheck "$out/results.json" 'r.levels.every(l=>l.ttft_ms.n===5 && l.ttft_ms.p50>0 && l.ttft_ms.p99>=l.ttft_ms.p50 && l.e2e_ms.p50>=l.ttft_ms.p50)' "TTFT and e2e latency per request"
jcheck "$out/results.json" 'r.levels.every(l=>l.prompt_tokens_per_request.min>0 && l.usage_missing===0)' "prompt tokens reported (stream_options.include_usage)"
jcheck "$out/results.json" 'r.server.model==="stories" && r.config.shared_prefix===10 && r.warmup.errors===0' "model name from /v1/models, config recorded"
jcheck "$out/results.json" 'new Set(r.levels.flatMap(l=>l.raw.map(x=>x.id))).size===10' "request ids unique across levels (--raw)"
jcheck "$out/results.json" 'r.levels.every(l=>l.server_counters_delta && l.server_counters_delta.llm_generation_tokens_total===l.completion_tokens)' "server counters per level (/metrics) match the client's token count"
[ -f "$out/metrics-start.txt" ] && [ -f "$out/metrics-after-C3.txt" ]
ok $? "/metrics snapshots saved"
[ -f "$out/plot.svg" ] && grep -q '</svg>' "$out/plot.svg" && ! grep -q 'NaN' "$out/plot.svg"
ok $? "plot.svg written"
if command -v xmllint >/dev/null; then xmllint --noout "$out/plot.svg" 2>/dev/null; ok $? "plot.svg is well-formed XML"; fi
grep -q 'TTFT p50' "$E2E_TMP/run1.out" && [ -f "$out/results.txt" ]
ok $? "table on stdout and in results.txt"

# ---- compare: two runs in one plot and markdown table
timeout 30 node "$LOAD" compare --out "$E2E_TMP/cmp" "$out/results.json" "$out/results.json" >"$E2E_TMP/cmp.out" 2>&1
st=$?
[ $st = 0 ] && grep -q '</svg>' "$E2E_TMP/cmp/compare.svg" && [ "$(grep -c '^| ' "$E2E_TMP/cmp/compare.md")" = 6 ]
ok $? "compare writes compare.svg and a markdown table (got $st)"
timeout 30 node "$LOAD" compare "$E2E_TMP/nonexistent.json" >/dev/null 2>&1
ok $([ $? = 2 ]; echo $?) "compare of a missing file: exit 2"

# ---- wrong key: a setup error, nothing measured
timeout 30 node "$LOAD" --url "$BASE/v1" --api-key wrong --concurrency 1 --requests 1 --out "$E2E_TMP/run2" 2>"$E2E_TMP/run2.err"
st=$?
ok $([ $st = 2 ] && grep -q 401 "$E2E_TMP/run2.err"; echo $?) "wrong key: exit 2 naming HTTP 401 (got $st)"

# ---- refused hosts: exit 2 before any connection, nothing written
for url in http://192.0.2.1:8080/v1 "http://[2001:db8::1]:80/v1" http://0.0.0.0:$PORT/v1; do
    timeout 30 node "$LOAD" --url "$url" --out "$E2E_TMP/run3" 2>"$E2E_TMP/run3.err"
    st=$?
    ok $([ $st = 2 ] && grep -q 'only loopback' "$E2E_TMP/run3.err" && [ ! -e "$E2E_TMP/run3" ]; echo $?) "refuses $url (got $st)"
done

# ---- the level time limit: in-flight requests aborted, the rest not started, exit 1
timeout 60 node "$LOAD" --url "$BASE/v1" --api-key sk-load --concurrency 2 --requests 20 --max-tokens 2000 \
    --prompt-tokens 10 --warmup 0 --level-timeout 0.5 --out "$E2E_TMP/run4" >/dev/null 2>"$E2E_TMP/run4.err"
st=$?
ok $([ $st = 1 ]; echo $?) "level time limit: exit 1 (got $st)"
jcheck "$E2E_TMP/run4/results.json" 'const l=r.levels[0]; l.level_timed_out && l.error_kinds.aborted===2 && l.not_started===18' "level time limit: 2 aborted, 18 not started"
stop_server

# ---- load.sh --serve: starts its own pair, loads it, stops it, keeps logs
out=$E2E_TMP/run5
LLM_FCGI=$SRV timeout 120 "$TOP_SRCDIR/tests/bench/load.sh" --serve "$M" --served-model-name stubby -- \
    --concurrency 2 --requests 2 --max-tokens 4 --prompt-tokens 20 --out "$out" >/dev/null 2>"$E2E_TMP/run5.err"
st=$?
ok $([ $st = 0 ]; echo $?) "load.sh --serve exits 0 (got $st)"
[ $st = 0 ] || sed 's/^/# /' "$E2E_TMP/run5.err"
jcheck "$out/results.json" 'r.server.model==="stubby" && r.levels[0].ok===2 && r.note==="stories260K.gguf"' "load.sh --serve: results of its own server"
jcheck "$out/results.json" 'r.server.rss_kib_start>0 && r.levels[0].server_rss_kib>0' "load.sh --serve: server resident memory recorded"
grep -q -- '--parallel 2' "$out/server-command.txt" && [ -s "$out/llm-fcgi.log" ]
ok $? "load.sh --serve: --parallel = max concurrency, server log kept"
e2e_done
