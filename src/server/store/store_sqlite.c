/* store_sqlite.c - the store on SQLite (Debian's libsqlite3), see store.h.
 *
 * One connection behind a mutex. WAL mode lets readers in other processes
 * (and sqlite3 on the command line) work while this one writes; synchronous
 * FULL makes every committed row durable (the WAL is fsynced at commit), so
 * neither kill -9 nor a power cut loses a completed response. A busy
 * timeout waits for other processes sharing the file instead of failing.
 */
#include "server/store/store.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    sqlite3 *db;
    pthread_mutex_t mu;
} sq_t;

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS llm_fcgi_responses ("
    " id TEXT PRIMARY KEY, owner TEXT NOT NULL, created_at INTEGER NOT NULL,"
    " expires_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, status TEXT NOT NULL,"
    " cancel INTEGER NOT NULL DEFAULT 0, response TEXT NOT NULL, items TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS llm_fcgi_responses_expires ON llm_fcgi_responses (expires_at);";

static lf_code_t sq_fail(sq_t *q, lf_err_t *e, const char *what)
{
    return lf_err_set(e, LF_ERR_IO, "SQLite: %s: %s", what, sqlite3_errmsg(q->db));
}

void *store_sqlite_open(const char *path, lf_err_t *e)
{
    sq_t *q = calloc(1, sizeof *q);
    if (!q) {
        lf_err_set(e, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    int rc = sqlite3_open_v2(path, &q->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        lf_err_set(e, LF_ERR_IO, "SQLite: cannot open %s: %s", path, q->db ? sqlite3_errmsg(q->db) : "out of memory");
        sqlite3_close(q->db);
        free(q);
        return NULL;
    }
    sqlite3_busy_timeout(q->db, 10000);
    char *msg = NULL;
    if (sqlite3_exec(q->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(q->db, schema, NULL, NULL, &msg) != SQLITE_OK) {
        lf_err_set(e, LF_ERR_IO, "SQLite: cannot set up %s: %s", path, msg ? msg : sqlite3_errmsg(q->db));
        sqlite3_free(msg);
        sqlite3_close(q->db);
        free(q);
        return NULL;
    }
    pthread_mutex_init(&q->mu, NULL);
    return q;
}

static void sq_close(void *db)
{
    sq_t *q = db;
    if (!q)
        return;
    sqlite3_close(q->db);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

/* Prepares sql and binds the text / integer arguments described by types
 * ('t' text, 'i' int64) from the va_list. NULL after filling *e. */
static sqlite3_stmt *prep(sq_t *q, lf_err_t *e, const char *sql, const char *types, ...)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(q->db, sql, -1, &st, NULL) != SQLITE_OK) {
        sq_fail(q, e, "prepare");
        return NULL;
    }
    va_list ap;
    va_start(ap, types);
    int rc = SQLITE_OK;
    for (int i = 0; types[i] && rc == SQLITE_OK; i++) {
        if (types[i] == 't')
            rc = sqlite3_bind_text(st, i + 1, va_arg(ap, const char *), -1, SQLITE_TRANSIENT);
        else
            rc = sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t));
    }
    va_end(ap);
    if (rc != SQLITE_OK) {
        sq_fail(q, e, "bind");
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

/* Steps a statement that returns no row; *changes: rows it touched. */
static lf_code_t run(sq_t *q, sqlite3_stmt *st, int64_t *changes, lf_err_t *e)
{
    if (!st)
        return LF_ERR_IO;
    int rc = sqlite3_step(st);
    lf_code_t c = rc == SQLITE_DONE ? LF_OK : sq_fail(q, e, "write");
    if (changes)
        *changes = sqlite3_changes(q->db);
    sqlite3_finalize(st);
    return c;
}

static lf_code_t sq_put(void *db, const store_rec_t *r, lf_err_t *e)
{
    sq_t *q = db;
    pthread_mutex_lock(&q->mu);
    sqlite3_stmt *st = prep(q, e,
                            "INSERT INTO llm_fcgi_responses (id, owner, created_at, expires_at, updated_at, status,"
                            " cancel, response, items) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, ?7, ?8)"
                            " ON CONFLICT (id) DO UPDATE SET owner = ?2, created_at = ?3, expires_at = ?4,"
                            " updated_at = ?5, status = ?6, response = ?7, items = ?8",
                            "ttiiittt", r->id, r->owner, r->created_at, r->expires_at, r->updated_at, r->status,
                            r->response, r->items);
    lf_code_t c = run(q, st, NULL, e);
    pthread_mutex_unlock(&q->mu);
    return c;
}

static char *col_dup(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return strdup(t ? (const char *)t : "");
}

static lf_code_t sq_get(void *db, const char *id, const char *owner, int64_t now, store_rec_t *out, lf_err_t *e)
{
    sq_t *q = db;
    pthread_mutex_lock(&q->mu);
    sqlite3_stmt *st = prep(q, e,
                            "SELECT id, owner, created_at, expires_at, updated_at, status, cancel, response, items"
                            " FROM llm_fcgi_responses WHERE id = ?1 AND owner = ?2 AND expires_at > ?3",
                            "tti", id, owner, now);
    lf_code_t c = LF_ERR_IO;
    if (st) {
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            out->id = col_dup(st, 0);
            out->owner = col_dup(st, 1);
            out->created_at = sqlite3_column_int64(st, 2);
            out->expires_at = sqlite3_column_int64(st, 3);
            out->updated_at = sqlite3_column_int64(st, 4);
            out->status = col_dup(st, 5);
            out->cancel = sqlite3_column_int64(st, 6) != 0;
            out->response = col_dup(st, 7);
            out->items = col_dup(st, 8);
            c = out->id && out->owner && out->status && out->response && out->items
                    ? LF_OK : lf_err_set(e, LF_ERR_NOMEM, "out of memory");
        } else if (rc == SQLITE_DONE) {
            c = lf_err_set(e, LF_ERR_NOT_FOUND, "no such response");
        } else {
            c = sq_fail(q, e, "read");
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&q->mu);
    if (c != LF_OK)
        store_rec_free(out);
    return c;
}

/* A one-row update / delete of the visible row id of owner. */
static lf_code_t one_row(sq_t *q, const char *sql, const char *id, const char *owner, int64_t now, lf_err_t *e)
{
    pthread_mutex_lock(&q->mu);
    int64_t n = 0;
    lf_code_t c = run(q, prep(q, e, sql, "tti", id, owner, now), &n, e);
    pthread_mutex_unlock(&q->mu);
    if (c == LF_OK && n == 0)
        c = lf_err_set(e, LF_ERR_NOT_FOUND, "no such response");
    return c;
}

static lf_code_t sq_del(void *db, const char *id, const char *owner, int64_t now, lf_err_t *e)
{
    return one_row(db, "DELETE FROM llm_fcgi_responses WHERE id = ?1 AND owner = ?2 AND expires_at > ?3", id, owner,
                   now, e);
}

static lf_code_t sq_cancel(void *db, const char *id, const char *owner, int64_t now, lf_err_t *e)
{
    return one_row(db, "UPDATE llm_fcgi_responses SET cancel = 1 WHERE id = ?1 AND owner = ?2 AND expires_at > ?3", id,
                   owner, now, e);
}

static lf_code_t sq_expire(void *db, int64_t now, int64_t *n, lf_err_t *e)
{
    sq_t *q = db;
    pthread_mutex_lock(&q->mu);
    lf_code_t c = run(q, prep(q, e, "DELETE FROM llm_fcgi_responses WHERE expires_at <= ?1", "i", now), n, e);
    pthread_mutex_unlock(&q->mu);
    return c;
}

const store_ops_t store_sqlite_ops = {"sqlite", sq_put, sq_get, sq_del, sq_cancel, sq_expire, sq_close};
