#!/bin/sh
# serve_agents.sh - the agent APIs end to end through nginx with the
# official clients (agents.test.mjs: `openai` responses.*, `@anthropic-ai/
# sdk` messages.*) on the scripted fixture model, the Responses store on
# SQLite:
#  1. the whole suite (Responses, Messages, background, key scoping, errors),
#     then mutated bodies through nginx (200 or a 4xx, the server stays up);
#     the store file is a real SQLite database in WAL mode holding the rows
#     and never the API keys;
#  2. SIGTERM, restart on the same file: the stored responses are there and
#     a conversation from before continues (previous_response_id);
#  3. kill -9 right after a response completed, restart: it is there;
#  4. retention (--store-ttl 2): an expired response is 404 at once and its
#     row is deleted from the file by the sweep.
# PostgreSQL and several backends: store_pg.sh. Emits TAP.
. "$(dirname "$0")/lib.sh"

MODEL_FILE=$E2E_TMP/scripted.gguf
need nginx node binary openai sqlite3
e2e_pkg @anthropic-ai/sdk || bail "the @anthropic-ai/sdk npm package is missing (npm ci in tests/e2e)"
scripted_model "$MODEL_FILE"
ok $? "mk_scripted writes the fixture model"
need model
STORE=$E2E_TMP/responses.db
STATE=$E2E_TMP/state.json

serve() {
    start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --served-model-name scripted --api-key sk-agents-a \
        --api-key sk-agents-b --parallel 2 --threads 1 --ctx-size 2048 --store "$STORE" "$@"
}
agents() { # agents PHASE
    BASE=$BASE KEY_A=sk-agents-a KEY_B=sk-agents-b MODEL=scripted STATE=$STATE PHASE=$1 \
        run_node "$TOP_SRCDIR/tests/e2e/agents.test.mjs"
}
rows() { sqlite3 "$STORE" "$1" 2>&1; }
# (sanitizer builds: configure --enable-sanitizers) nothing reported
clean_log() {
    ! grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$E2E_TMP/llm.log"
    ok $? "$1: no sanitizer report in the server log"
}

if ! serve; then
    ok 1 "llm-fcgi starts on the fixture with --store $STORE"
    e2e_done
    exit 1
fi
grep -q "responses stored in $STORE (sqlite" "$E2E_TMP/llm.log"
ok $? "start-up log: the SQLite store"
NODE_TIMEOUT=300 agents main
agents fuzz
[ "$(rows 'PRAGMA journal_mode')" = wal ]
ok $? "the store is a SQLite database in WAL mode"
n=$(rows 'SELECT count(*) FROM llm_fcgi_responses')
[ "$n" -gt 5 ] 2>/dev/null
ok $? "the store holds the stored responses ($n rows)"
! grep -qa 'sk-agents' "$STORE" "$STORE-wal" 2>/dev/null
ok $? "no API key in the store (owners are key hashes)"
[ "$(rows "SELECT count(DISTINCT owner) FROM llm_fcgi_responses WHERE length(owner) = 64")" -ge 1 ]
ok $? "rows are owned by a key hash"
stop_server
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM: exit 0 (got $LLM_STATUS)"
clean_log "the whole suite"

# 2. restart on the same store
if serve; then
    agents restart
    agents killed
    # 3. kill -9 right after that response completed
    kill -9 "$LLM_PID" 2>/dev/null
    wait "$LLM_PID" 2>/dev/null
    kill "$NGINX_PID" 2>/dev/null
    wait "$NGINX_PID" 2>/dev/null
    if serve; then
        agents restart
        stop_server
        ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM after the restart: exit 0 (got $LLM_STATUS)"
        clean_log "after kill -9"
    else
        ok 1 "llm-fcgi restarts after kill -9"
    fi
else
    ok 1 "llm-fcgi restarts on the same store"
fi

# 4. retention
if serve --store-ttl 2; then
    grep -q "kept 2 s" "$E2E_TMP/llm.log"
    ok $? "start-up log: --store-ttl 2"
    id=$(curl -s -m 30 "$BASE/v1/responses" -H 'Authorization: Bearer sk-agents-a' \
        -H 'Content-Type: application/json' -d '{"model":"scripted","input":"Hello there.","temperature":0}' |
        node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{try{console.log(JSON.parse(s).id)}catch(e){console.log("none")}})')
    [ "$(rows "SELECT count(*) FROM llm_fcgi_responses WHERE id = '$id'")" = 1 ]
    ok $? "retention: the new response is stored ($id)"
    code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$BASE/v1/responses/$id" -H 'Authorization: Bearer sk-agents-a')
    [ "$code" = 200 ]
    ok $? "retention: readable while it lives (got $code)"
    sleep 3
    code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$BASE/v1/responses/$id" -H 'Authorization: Bearer sk-agents-a')
    [ "$code" = 404 ]
    ok $? "retention: 404 once expired (got $code)"
    i=0
    while [ "$(rows "SELECT count(*) FROM llm_fcgi_responses WHERE id = '$id'")" != 0 ] && [ $i -lt 50 ]; do
        sleep 0.1; i=$((i + 1))
    done
    [ "$(rows "SELECT count(*) FROM llm_fcgi_responses WHERE id = '$id'")" = 0 ]
    ok $? "retention: the sweep deleted its row"
    grep -q "retention deleted" "$E2E_TMP/llm.log"
    ok $? "retention: logged"
    stop_server
    ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM: exit 0 (got $LLM_STATUS)"
    clean_log "retention"
else
    ok 1 "llm-fcgi starts with --store-ttl 2"
fi
e2e_done
