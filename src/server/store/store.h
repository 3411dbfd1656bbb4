/* store.h - stored Responses (OpenAI's `store`, `previous_response_id`,
 * GET / DELETE / input_items / cancel): a small interface over a real
 * database, one backend per file:
 *   - store_sqlite.c: a file path -> SQLite (Debian's libsqlite3), WAL mode,
 *     synchronous FULL: a committed row survives kill -9 and power loss;
 *     several processes on one machine may share the file;
 *   - store_pg.c: a postgresql:// (or postgres://) URL -> PostgreSQL
 *     (libpq), for several llm-fcgi processes or machines behind one nginx
 *     that must continue each other's conversations.
 * Both hold the same table (created when missing):
 *   llm_fcgi_responses(id PRIMARY KEY, owner, created_at, expires_at,
 *                      updated_at, status, cancel, response, items)
 *
 * A row belongs to an owner (the hex SHA-256 of the API key that created
 * it; "" on a server without keys): get / delete / cancel with another
 * owner find nothing, exactly as for an unknown id. A row is invisible
 * once expires_at (unix seconds) has passed, and a sweeper thread deletes
 * such rows (retention, --store-ttl) every min(ttl / 2, 60) seconds.
 *
 * Thread-safe: every function may be called from any acceptor thread. A
 * backend holds one connection behind a mutex (statements are short); the
 * PostgreSQL one reconnects when the server went away.
 *
 * Ownership: store_get fills a store_rec_t whose strings the caller frees
 * with store_rec_free. Errors are LF_ERR_NOT_FOUND (no such visible row)
 * or LF_ERR_IO (the database failed; message says why).
 */
#ifndef LF_STORE_H
#define LF_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

typedef struct {
    char *id;            /* "resp_..." */
    char *owner;         /* hex SHA-256 of the creating key, or "" */
    int64_t created_at;  /* unix seconds */
    int64_t expires_at;  /* unix seconds: invisible after, then deleted */
    int64_t updated_at;  /* unix seconds: last write (a running background
                            response's heartbeat) */
    char *status;        /* the response's status: queued, in_progress,
                            completed, incomplete, failed, cancelled */
    bool cancel;         /* cancellation requested (background responses) */
    char *response;      /* the response object, JSON text */
    char *items;         /* the input items (the whole conversation the
                            response answered), JSON array text */
} store_rec_t;

typedef struct store store_t;

/* Opens (creating the file / table when missing) the store at `where`: a
 * postgresql:// or postgres:// URL, else a file path. ttl: seconds a row
 * lives (the caller sets expires_at; this only paces the sweeper).
 * NULL with *e filled when it cannot be opened or reached (a PostgreSQL
 * server lost later is reconnected on use). */
store_t *store_open(const char *where, int64_t ttl, lf_err_t *e);
void store_close(store_t *st); /* accepts NULL */
/* "sqlite" or "postgresql". */
const char *store_kind(const store_t *st);

/* Inserts the row, or replaces every field of the row with its id except
 * `cancel` (a cancellation requested meanwhile is kept). */
lf_code_t store_put(store_t *st, const store_rec_t *r, lf_err_t *e);
/* The visible row id of owner (now: unix seconds). */
lf_code_t store_get(store_t *st, const char *id, const char *owner, int64_t now, store_rec_t *out, lf_err_t *e);
/* Deletes the visible row id of owner. */
lf_code_t store_delete(store_t *st, const char *id, const char *owner, int64_t now, lf_err_t *e);
/* Sets `cancel` on the visible row id of owner. */
lf_code_t store_request_cancel(store_t *st, const char *id, const char *owner, int64_t now, lf_err_t *e);
/* Deletes every row with expires_at <= now; *n (may be NULL) how many. */
lf_code_t store_expire(store_t *st, int64_t now, int64_t *n, lf_err_t *e);

void store_rec_free(store_rec_t *r); /* the strings; accepts a zeroed record */

/* The default store when none is configured: responses.db in the state
 * directory: $STATE_DIRECTORY (systemd's StateDirectory=, the package's
 * /var/lib/llm-fcgi), else $XDG_STATE_HOME/llm-fcgi, else
 * ~/.local/state/llm-fcgi (created). False when there is none. */
bool store_default_path(char *buf, size_t cap);
/* `where` for a log line: a URL without its password. */
void store_describe(const char *where, char *buf, size_t cap);

/* ---- backends (store_sqlite.c, store_pg.c) ---- */
typedef struct store_ops {
    const char *kind;
    lf_code_t (*put)(void *db, const store_rec_t *r, lf_err_t *e);
    lf_code_t (*get)(void *db, const char *id, const char *owner, int64_t now, store_rec_t *out, lf_err_t *e);
    lf_code_t (*del)(void *db, const char *id, const char *owner, int64_t now, lf_err_t *e);
    lf_code_t (*cancel)(void *db, const char *id, const char *owner, int64_t now, lf_err_t *e);
    lf_code_t (*expire)(void *db, int64_t now, int64_t *n, lf_err_t *e);
    void (*close)(void *db);
} store_ops_t;

void *store_sqlite_open(const char *path, lf_err_t *e);
extern const store_ops_t store_sqlite_ops;
void *store_pg_open(const char *url, lf_err_t *e);
extern const store_ops_t store_pg_ops;

#endif
