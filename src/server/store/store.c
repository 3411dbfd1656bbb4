/* store.c - the store's front: picks the backend from the address, runs
 * the retention sweeper (see store.h). */
#include "server/store/store.h"

#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct store {
    const store_ops_t *ops;
    void *db;
    int64_t sweep_s;             /* seconds between sweeps */
    pthread_t sweeper;
    bool has_sweeper;
    pthread_mutex_t mu;          /* guards stop (with cv) */
    pthread_cond_t cv;
    bool stop;
};

static bool is_pg_url(const char *w)
{
    return !strncmp(w, "postgresql://", 13) || !strncmp(w, "postgres://", 11);
}

/* Deletes expired rows every sweep_s seconds until store_close. */
static void *sweep_main(void *arg)
{
    store_t *st = arg;
    pthread_mutex_lock(&st->mu);
    while (!st->stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += st->sweep_s;
        pthread_cond_timedwait(&st->cv, &st->mu, &until);
        if (st->stop)
            break;
        pthread_mutex_unlock(&st->mu);
        lf_err_t e;
        int64_t n = 0;
        if (st->ops->expire(st->db, (int64_t)time(NULL), &n, &e) != LF_OK)
            fprintf(stderr, "llm-fcgi: store: retention sweep failed: %s\n", e.msg);
        else if (n > 0)
            fprintf(stderr, "llm-fcgi: store: retention deleted %lld expired response(s)\n", (long long)n);
        pthread_mutex_lock(&st->mu);
    }
    pthread_mutex_unlock(&st->mu);
    return NULL;
}

store_t *store_open(const char *where, int64_t ttl, lf_err_t *e)
{
    if (!where || !*where) {
        lf_err_set(e, LF_ERR_INVALID, "no store address");
        return NULL;
    }
    store_t *st = calloc(1, sizeof *st);
    if (!st) {
        lf_err_set(e, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    st->ops = is_pg_url(where) ? &store_pg_ops : &store_sqlite_ops;
    st->db = is_pg_url(where) ? store_pg_open(where, e) : store_sqlite_open(where, e);
    if (!st->db) {
        free(st);
        return NULL;
    }
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, NULL);
    st->sweep_s = ttl / 2 < 1 ? 1 : ttl / 2 > 60 ? 60 : ttl / 2;
    st->has_sweeper = pthread_create(&st->sweeper, NULL, sweep_main, st) == 0;
    return st;
}

void store_close(store_t *st)
{
    if (!st)
        return;
    if (st->has_sweeper) {
        pthread_mutex_lock(&st->mu);
        st->stop = true;
        pthread_cond_signal(&st->cv);
        pthread_mutex_unlock(&st->mu);
        pthread_join(st->sweeper, NULL);
    }
    st->ops->close(st->db);
    pthread_mutex_destroy(&st->mu);
    pthread_cond_destroy(&st->cv);
    free(st);
}

const char *store_kind(const store_t *st)
{
    return st->ops->kind;
}

lf_code_t store_put(store_t *st, const store_rec_t *r, lf_err_t *e)
{
    return st->ops->put(st->db, r, e);
}

lf_code_t store_get(store_t *st, const char *id, const char *owner, int64_t now, store_rec_t *out, lf_err_t *e)
{
    memset(out, 0, sizeof *out);
    return st->ops->get(st->db, id, owner, now, out, e);
}

lf_code_t store_delete(store_t *st, const char *id, const char *owner, int64_t now, lf_err_t *e)
{
    return st->ops->del(st->db, id, owner, now, e);
}

lf_code_t store_request_cancel(store_t *st, const char *id, const char *owner, int64_t now, lf_err_t *e)
{
    return st->ops->cancel(st->db, id, owner, now, e);
}

lf_code_t store_expire(store_t *st, int64_t now, int64_t *n, lf_err_t *e)
{
    int64_t k = 0;
    lf_code_t c = st->ops->expire(st->db, now, &k, e);
    if (n)
        *n = k;
    return c;
}

void store_rec_free(store_rec_t *r)
{
    if (!r)
        return;
    free(r->id);
    free(r->owner);
    free(r->status);
    free(r->response);
    free(r->items);
    memset(r, 0, sizeof *r);
}

/* mkdir -p of path's directories and path itself (mode 0700 for new ones). */
static bool make_dirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        bool ok = mkdir(path, 0700) == 0 || errno == EEXIST;
        *p = '/';
        if (!ok)
            return false;
    }
    return mkdir(path, 0700) == 0 || errno == EEXIST;
}

bool store_default_path(char *buf, size_t cap)
{
    const char *sd = getenv("STATE_DIRECTORY"), *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    char dir[4096];
    if (sd && *sd)
        snprintf(dir, sizeof dir, "%.*s", (int)strcspn(sd, ":"), sd); /* the first of a list */
    else if (xdg && *xdg == '/')
        snprintf(dir, sizeof dir, "%s/llm-fcgi", xdg);
    else if (home && *home == '/')
        snprintf(dir, sizeof dir, "%s/.local/state/llm-fcgi", home);
    else
        return false;
    if (!make_dirs(dir))
        return false;
    return (size_t)snprintf(buf, cap, "%s/responses.db", dir) < cap;
}

void store_describe(const char *where, char *buf, size_t cap)
{
    const char *at = is_pg_url(where) ? strrchr(where, '@') : NULL;
    if (!at) {
        snprintf(buf, cap, "%s", where);
        return;
    }
    const char *rest = strstr(where, "://") + 3;
    size_t user = strcspn(rest, ":@");
    snprintf(buf, cap, "%.*s%.*s@%s", (int)(rest - where), where, (int)user, rest, at + 1);
}
