/* store_pg.c - the store on PostgreSQL (libpq), see store.h.
 *
 * One connection behind a mutex; every statement is a single
 * auto-committed PQexecParams with text parameters (the values never enter
 * the SQL text). When the server went away (restart, failover) the
 * connection is reset and the statement tried once more. The table is
 * created at open under a transaction-scoped advisory lock, so backends
 * starting together do not race on CREATE TABLE.
 */
#include "server/store/store.h"

#include <inttypes.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    PGconn *conn;
    pthread_mutex_t mu;
} pg_t;

static const char schema[] =
    "BEGIN;"
    "SELECT pg_advisory_xact_lock(7244178826151210026);"
    "CREATE TABLE IF NOT EXISTS llm_fcgi_responses ("
    " id TEXT PRIMARY KEY, owner TEXT NOT NULL, created_at BIGINT NOT NULL,"
    " expires_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, status TEXT NOT NULL,"
    " cancel INTEGER NOT NULL DEFAULT 0, response TEXT NOT NULL, items TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS llm_fcgi_responses_expires ON llm_fcgi_responses (expires_at);"
    "COMMIT;";

/* libpq's message without its trailing newline. */
static lf_code_t pg_fail(pg_t *p, lf_err_t *e, const char *what)
{
    const char *m = PQerrorMessage(p->conn);
    int n = (int)strlen(m);
    while (n && (m[n - 1] == '\n' || m[n - 1] == ' '))
        n--;
    return lf_err_set(e, LF_ERR_IO, "PostgreSQL: %s: %.*s", what, n, m);
}

/* Notices (e.g. "relation already exists, skipping") stay out of the log. */
static void quiet(void *arg, const char *msg)
{
    (void)arg, (void)msg;
}

void *store_pg_open(const char *url, lf_err_t *e)
{
    pg_t *p = calloc(1, sizeof *p);
    if (!p) {
        lf_err_set(e, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    p->conn = PQconnectdb(url);
    if (!p->conn || PQstatus(p->conn) != CONNECTION_OK) {
        if (p->conn)
            pg_fail(p, e, "cannot connect");
        else
            lf_err_set(e, LF_ERR_NOMEM, "out of memory");
        PQfinish(p->conn);
        free(p);
        return NULL;
    }
    PQsetNoticeProcessor(p->conn, quiet, NULL);
    PGresult *res = PQexec(p->conn, schema);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    if (!ok) {
        pg_fail(p, e, "cannot create the table");
        PQfinish(p->conn);
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    return p;
}

static void pg_close(void *db)
{
    pg_t *p = db;
    if (!p)
        return;
    PQfinish(p->conn);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* Runs sql with n text parameters (caller holds the mutex); a lost
 * connection is reset and the statement retried once. NULL after filling
 * *e; else the result, which the caller clears. */
static PGresult *exec(pg_t *p, const char *sql, int n, const char *const *vals, lf_err_t *e)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        if (PQstatus(p->conn) != CONNECTION_OK)
            PQreset(p->conn);
        PGresult *res = PQexecParams(p->conn, sql, n, NULL, vals, NULL, NULL, 0);
        ExecStatusType s = PQresultStatus(res);
        if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK)
            return res;
        PQclear(res);
        if (PQstatus(p->conn) == CONNECTION_OK)
            break; /* a real error, not a lost connection */
    }
    pg_fail(p, e, "statement failed");
    return NULL;
}

static lf_code_t pg_put(void *db, const store_rec_t *r, lf_err_t *e)
{
    pg_t *p = db;
    char c[24], x[24], u[24];
    snprintf(c, sizeof c, "%" PRId64, r->created_at);
    snprintf(x, sizeof x, "%" PRId64, r->expires_at);
    snprintf(u, sizeof u, "%" PRId64, r->updated_at);
    const char *v[] = {r->id, r->owner, c, x, u, r->status, r->response, r->items};
    pthread_mutex_lock(&p->mu);
    PGresult *res = exec(p,
                         "INSERT INTO llm_fcgi_responses (id, owner, created_at, expires_at, updated_at, status,"
                         " cancel, response, items) VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $8)"
                         " ON CONFLICT (id) DO UPDATE SET owner = $2, created_at = $3, expires_at = $4,"
                         " updated_at = $5, status = $6, response = $7, items = $8",
                         8, v, e);
    pthread_mutex_unlock(&p->mu);
    PQclear(res);
    return res ? LF_OK : LF_ERR_IO;
}

static char *field_dup(PGresult *res, int col)
{
    return strdup(PQgetisnull(res, 0, col) ? "" : PQgetvalue(res, 0, col));
}

static lf_code_t pg_get(void *db, const char *id, const char *owner, int64_t now, store_rec_t *out, lf_err_t *e)
{
    pg_t *p = db;
    char t[24];
    snprintf(t, sizeof t, "%" PRId64, now);
    const char *v[] = {id, owner, t};
    pthread_mutex_lock(&p->mu);
    PGresult *res = exec(p,
                         "SELECT id, owner, created_at, expires_at, updated_at, status, cancel, response, items"
                         " FROM llm_fcgi_responses WHERE id = $1 AND owner = $2 AND expires_at > $3",
                         3, v, e);
    pthread_mutex_unlock(&p->mu);
    if (!res)
        return LF_ERR_IO;
    lf_code_t c;
    if (PQntuples(res) < 1) {
        c = lf_err_set(e, LF_ERR_NOT_FOUND, "no such response");
    } else {
        out->id = field_dup(res, 0);
        out->owner = field_dup(res, 1);
        out->created_at = strtoll(PQgetvalue(res, 0, 2), NULL, 10);
        out->expires_at = strtoll(PQgetvalue(res, 0, 3), NULL, 10);
        out->updated_at = strtoll(PQgetvalue(res, 0, 4), NULL, 10);
        out->status = field_dup(res, 5);
        out->cancel = strtol(PQgetvalue(res, 0, 6), NULL, 10) != 0;
        out->response = field_dup(res, 7);
        out->items = field_dup(res, 8);
        c = out->id && out->owner && out->status && out->response && out->items
                ? LF_OK : lf_err_set(e, LF_ERR_NOMEM, "out of memory");
    }
    PQclear(res);
    if (c != LF_OK)
        store_rec_free(out);
    return c;
}

/* A statement over the visible row id of owner; NOT_FOUND when it touched
 * none. */
static lf_code_t one_row(pg_t *p, const char *sql, const char *id, const char *owner, int64_t now, lf_err_t *e)
{
    char t[24];
    snprintf(t, sizeof t, "%" PRId64, now);
    const char *v[] = {id, owner, t};
    pthread_mutex_lock(&p->mu);
    PGresult *res = exec(p, sql, 3, v, e);
    pthread_mutex_unlock(&p->mu);
    if (!res)
        return LF_ERR_IO;
    long n = strtol(PQcmdTuples(res), NULL, 10);
    PQclear(res);
    return n > 0 ? LF_OK : lf_err_set(e, LF_ERR_NOT_FOUND, "no such response");
}

static lf_code_t pg_del(void *db, const char *id, const char *owner, int64_t now, lf_err_t *e)
{
    return one_row(db, "DELETE FROM llm_fcgi_responses WHERE id = $1 AND owner = $2 AND expires_at > $3", id, owner,
                   now, e);
}

static lf_code_t pg_cancel(void *db, const char *id, const char *owner, int64_t now, lf_err_t *e)
{
    return one_row(db, "UPDATE llm_fcgi_responses SET cancel = 1 WHERE id = $1 AND owner = $2 AND expires_at > $3",
                   id, owner, now, e);
}

static lf_code_t pg_expire(void *db, int64_t now, int64_t *n, lf_err_t *e)
{
    pg_t *p = db;
    char t[24];
    snprintf(t, sizeof t, "%" PRId64, now);
    const char *v[] = {t};
    pthread_mutex_lock(&p->mu);
    PGresult *res = exec(p, "DELETE FROM llm_fcgi_responses WHERE expires_at <= $1", 1, v, e);
    pthread_mutex_unlock(&p->mu);
    if (!res)
        return LF_ERR_IO;
    *n = strtoll(PQcmdTuples(res), NULL, 10);
    PQclear(res);
    return LF_OK;
}

const store_ops_t store_pg_ops = {"postgresql", pg_put, pg_get, pg_del, pg_cancel, pg_expire, pg_close};
