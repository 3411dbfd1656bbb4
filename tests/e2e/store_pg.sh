#!/bin/sh
# store_pg.sh - the Responses store on PostgreSQL, on a throwaway cluster
# this script starts itself (Debian's postgresql package: initdb in a
# temporary directory, run as `nobody` when the tests run as root, since
# the server refuses root; unix socket only, no TCP):
#  1. the store's unit test (tests/unit/test_store) against it;
#  2. two llm-fcgi backends on the scripted fixture sharing it behind the
#     shipped nginx site (least_conn upstream): a conversation whose turns
#     land on both backends continues across them (agents.test.mjs
#     PHASE=chain), both logs show turns, and the rows are in PostgreSQL;
#  3. key scoping through the shared store;
#  4. one backend killed with SIGKILL: the other continues its
#     conversations; restarted, it reads them all.
# Emits TAP.
. "$(dirname "$0")/lib.sh"

need nginx node binary openai psql
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$PG_BIN" ] && [ -x "$PG_BIN/initdb" ] || bail "PostgreSQL server binaries missing (Debian package postgresql)"
MODEL_FILE=$E2E_TMP/scripted.gguf
TEST_STORE=${TEST_STORE:-$(dirname "$LLM_FCGI")/tests/unit/test_store}
[ -x "$TEST_STORE" ] || bail "no store unit test ($TEST_STORE)"

# ---- the throwaway cluster
PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/llm-pg.XXXXXX")
as_pg() {
    if [ "$(id -u)" = 0 ]; then runuser -u nobody -- "$@"; else "$@"; fi
}
[ "$(id -u)" = 0 ] && chown nobody "$PG_DIR"
at_exit "as_pg '$PG_BIN/pg_ctl' -D '$PG_DIR/data' -m immediate stop >/dev/null 2>&1; rm -rf '$PG_DIR'"
as_pg "$PG_BIN/initdb" -D "$PG_DIR/data" -U llm --auth=trust -E UTF8 --no-sync >"$PG_DIR/initdb.log" 2>&1
ok $? "initdb of a throwaway cluster in $PG_DIR"
PG_PORT=$(free_port)
as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
    -o "-k $PG_DIR -p $PG_PORT -c listen_addresses='' -c fsync=off" start >"$PG_DIR/ctl.log" 2>&1
if ! ok $? "PostgreSQL starts (port $PG_PORT, socket in $PG_DIR)"; then
    sed 's/^/# /' "$PG_DIR/ctl.log" "$PG_DIR/server.log" 2>/dev/null | tail -n 20
    e2e_done
    exit 1
fi
URL="postgresql://llm@/postgres?host=$PG_DIR&port=$PG_PORT"
pgq() { psql "$URL" -At -c "$1" 2>&1; }

# ---- 1. the store's unit test on PostgreSQL
run_tap "$TEST_STORE" "$URL"

# ---- 2. two backends sharing it behind the shipped site
scripted_model "$MODEL_FILE"
ok $? "mk_scripted writes the fixture model"
need model
start_backend() { # start_backend NAME: llm-fcgi on $E2E_TMP/NAME.sock; sets PID_NAME
    "$LLM_FCGI" serve -m "$MODEL_FILE" --served-model-name scripted --api-key sk-pg-a --api-key sk-pg-b \
        --parallel 2 --threads 1 --ctx-size 2048 --store "$URL" --socket "$E2E_TMP/$1.sock" \
        >>"$E2E_TMP/$1.out" 2>>"$E2E_TMP/$1.log" &
    LLM_PID=$!
    eval "PID_$1=$LLM_PID"
    E2E_PIDS="$E2E_PIDS $LLM_PID"
    wait_socket "$E2E_TMP/$1.sock"
}
start_backend one && start_backend two
ok $? "two backends start on the shared PostgreSQL store"
grep -q "(postgresql," "$E2E_TMP/one.log" && grep -q "(postgresql," "$E2E_TMP/two.log"
ok $? "start-up logs: the PostgreSQL store"
start_site "$E2E_TMP/one.sock" "$E2E_TMP/two.sock"
ok $? "the shipped site in front of both"
STATE=$E2E_TMP/state.json
agents() {
    BASE=$BASE KEY_A=sk-pg-a KEY_B=sk-pg-b MODEL=scripted STATE=$STATE PHASE=$1 PREFIX="[pg $1] " \
        run_node "$TOP_SRCDIR/tests/e2e/agents.test.mjs"
}
agents chain
n1=$(grep -c 'POST /v1/responses 200' "$E2E_TMP/one.log")
n2=$(grep -c 'POST /v1/responses 200' "$E2E_TMP/two.log")
[ "$n1" -gt 0 ] && [ "$n2" -gt 0 ]
ok $? "the conversation's turns went to both backends ($n1 and $n2)"
rows=$(pgq "SELECT count(*) FROM llm_fcgi_responses")
[ "$rows" -ge 4 ] 2>/dev/null
ok $? "the responses are rows in PostgreSQL ($rows)"

# ---- 3. key scoping through the shared store
agents scoping

# ---- 4. SIGKILL one backend: the other goes on; restarted, it reads all
kill -9 "$PID_one" 2>/dev/null
wait "$PID_one" 2>/dev/null
agents chain
start_backend one
ok $? "the killed backend restarts"
agents ids
# both stop cleanly (sanitizer builds: no report, no leak)
for b in one two; do
    eval "pid=\$PID_$b"
    kill -TERM "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    st=$?
    ok $([ "$st" = 0 ]; echo $?) "backend $b: SIGTERM, exit 0 (got $st)"
    ! grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$E2E_TMP/$b.log"
    ok $? "backend $b: no sanitizer report in its log"
done
e2e_done
