/* test_store.c - the response store (src/server/store/) on a backend:
 * insert / read back, owner scoping (another owner sees nothing), an
 * update that keeps a cancel request, delete, cancel, visibility ending at
 * expires_at and the sweep deleting expired rows, reopening (the rows are
 * still there), and writers on several threads at once.
 *
 *   test_store                      SQLite in a temporary directory
 *   test_store postgresql://...     that PostgreSQL database (the e2e
 *                                   script store_pg.sh starts a throwaway
 *                                   cluster and runs this against it)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/store/store.h"
#include "tap.h"

static store_rec_t rec(const char *id, const char *owner, int64_t created, int64_t expires, const char *status,
                       const char *resp, const char *items)
{
    return (store_rec_t){.id = (char *)id, .owner = (char *)owner, .created_at = created, .expires_at = expires,
                         .updated_at = created, .status = (char *)status, .response = (char *)resp,
                         .items = (char *)items};
}

typedef struct {
    store_t *st;
    int t;
    int fails;
} writer_t;

static void *writer(void *arg)
{
    writer_t *w = arg;
    int64_t now = (int64_t)time(NULL);
    for (int i = 0; i < 25; i++) {
        char id[64];
        snprintf(id, sizeof id, "resp_thread%d_%d", w->t, i);
        store_rec_t r = rec(id, "o", now, now + 3600, "completed", "{\"n\":1}", "[]");
        lf_err_t e;
        store_rec_t got;
        if (store_put(w->st, &r, &e) != LF_OK || store_get(w->st, id, "o", now, &got, &e) != LF_OK)
            w->fails++;
        else
            store_rec_free(&got);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    char dir[] = "/tmp/llm-store-XXXXXX", where[512];
    bool pg = argc > 1;
    if (pg) {
        snprintf(where, sizeof where, "%s", argv[1]);
    } else {
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            return 1;
        }
        snprintf(where, sizeof where, "%s/responses.db", dir);
    }
    lf_err_t e = {0};
    store_t *st = store_open(where, 3600, &e);
    if (!tap_ok(st != NULL, "open %s (%s)", pg ? "PostgreSQL" : "SQLite", e.msg))
        return tap_done();
    tap_ok(!strcmp(store_kind(st), pg ? "postgresql" : "sqlite"), "kind %s", store_kind(st));
    int64_t now = (int64_t)time(NULL);
    char id[64];
    snprintf(id, sizeof id, "resp_test_%d_%lld", (int)getpid(), (long long)now);
    store_rec_t r = rec(id, "owner-a", now, now + 3600, "completed", "{\"id\":\"x\",\"o\":\"ü\\u0000'\"}",
                        "[{\"type\":\"message\",\"text\":\"'; DROP TABLE x; --\"}]");
    tap_ok(store_put(st, &r, &e) == LF_OK, "put (%s)", e.msg);
    store_rec_t got;
    if (tap_ok(store_get(st, id, "owner-a", now, &got, &e) == LF_OK, "get (%s)", e.msg)) {
        tap_ok(!strcmp(got.id, id) && !strcmp(got.owner, "owner-a") && got.created_at == now &&
                   got.expires_at == now + 3600 && !strcmp(got.status, "completed") && !got.cancel &&
                   !strcmp(got.response, r.response) && !strcmp(got.items, r.items),
               "get: every field as put (quotes and UTF-8 intact)");
        store_rec_free(&got);
    }
    tap_ok(store_get(st, id, "owner-b", now, &got, &e) == LF_ERR_NOT_FOUND, "another owner: not found");
    tap_ok(store_get(st, "resp_nope", "owner-a", now, &got, &e) == LF_ERR_NOT_FOUND, "unknown id: not found");
    tap_ok(store_delete(st, id, "owner-b", now, &e) == LF_ERR_NOT_FOUND, "another owner cannot delete");
    tap_ok(store_request_cancel(st, id, "owner-b", now, &e) == LF_ERR_NOT_FOUND, "another owner cannot cancel");
    tap_ok(store_request_cancel(st, id, "owner-a", now, &e) == LF_OK, "cancel requested (%s)", e.msg);
    r.status = "cancelled";
    r.response = "{\"v\":2}";
    tap_ok(store_put(st, &r, &e) == LF_OK, "put again (an update)");
    if (tap_ok(store_get(st, id, "owner-a", now, &got, &e) == LF_OK, "get after update")) {
        tap_ok(got.cancel && !strcmp(got.status, "cancelled") && !strcmp(got.response, "{\"v\":2}"),
               "update replaced the fields and kept the cancel request");
        store_rec_free(&got);
    }
    tap_ok(store_get(st, id, "owner-a", now + 3600, &got, &e) == LF_ERR_NOT_FOUND, "invisible once expired");
    /* rows that expire: the sweep deletes exactly those */
    char old[96];
    snprintf(old, sizeof old, "%s_old", id);
    store_rec_t o = rec(old, "owner-a", now - 100, now - 1, "completed", "{}", "[]");
    tap_ok(store_put(st, &o, &e) == LF_OK, "put an expired row");
    int64_t n = -1;
    tap_ok(store_expire(st, now, &n, &e) == LF_OK && n >= 1, "expire: %lld row(s) deleted", (long long)n);
    tap_ok(store_get(st, id, "owner-a", now, &got, &e) == LF_OK, "a live row survives the sweep");
    store_rec_free(&got);
    store_close(st);
    /* reopened: still there */
    st = store_open(where, 3600, &e);
    tap_ok(st && store_get(st, id, "owner-a", now, &got, &e) == LF_OK, "reopened: the row is still there");
    store_rec_free(&got);
    /* writers on several threads */
    writer_t w[4];
    pthread_t th[4];
    for (int t = 0; t < 4; t++) {
        w[t] = (writer_t){st, t, 0};
        pthread_create(&th[t], NULL, writer, &w[t]);
    }
    int fails = 0;
    for (int t = 0; t < 4; t++) {
        pthread_join(th[t], NULL);
        fails += w[t].fails;
    }
    tap_ok(fails == 0, "4 threads x 25 put+get: %d failures", fails);
    tap_ok(store_delete(st, id, "owner-a", now, &e) == LF_OK, "delete");
    tap_ok(store_get(st, id, "owner-a", now, &got, &e) == LF_ERR_NOT_FOUND, "deleted: not found");
    tap_ok(store_delete(st, id, "owner-a", now, &e) == LF_ERR_NOT_FOUND, "delete again: not found");
    /* the sweeper thread: a row that expires in 1 s is gone soon after
     * (ttl 2: a sweep every second) */
    store_close(st);
    st = store_open(where, 2, &e);
    snprintf(old, sizeof old, "%s_sweep", id);
    now = (int64_t)time(NULL);
    o = rec(old, "owner-a", now, now + 1, "completed", "{}", "[]");
    store_put(st, &o, &e);
    store_close(st); /* the row is hidden by expires_at at once; deleted by a sweeper */
    st = store_open(where, 2, &e);
    bool gone = false;
    for (int i = 0; i < 150 && !gone; i++) { /* up to 15 s: a loaded machine may delay the 1 s sweeps */
        usleep(100 * 1000);
        /* read as of its creation: visible until the sweeper deletes it */
        gone = store_get(st, old, "owner-a", now, &got, &e) == LF_ERR_NOT_FOUND;
        if (!gone)
            store_rec_free(&got);
    }
    tap_ok(gone, "the sweeper deleted the expired row");
    for (int t = 0; t < 4; t++)
        for (int i = 0; i < 25; i++) {
            char tid[64];
            snprintf(tid, sizeof tid, "resp_thread%d_%d", t, i);
            store_delete(st, tid, "o", (int64_t)time(NULL), &e);
        }
    store_close(st);
    if (!pg) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0)
            tap_diag("could not remove %s", dir);
    }
    return tap_done();
}
