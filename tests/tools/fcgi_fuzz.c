/* fcgi_fuzz - raw-socket fuzzer of llm-fcgi's FastCGI layer. Speaks to the
 * server's socket directly (no nginx) and sends, case after case, record
 * streams a hostile or broken peer could send: mutated and truncated
 * requests, wrong versions, unknown record types, content and padding
 * lengths that lie, huge name-value lengths, endless PARAMS streams,
 * interleaved request ids, management-record floods, ABORT_REQUEST,
 * random bytes; well-formed requests split at random points or heavily
 * padded (which must still be answered); and peers that stall: ones that
 * never finish sending a request and ones that never read a long stream,
 * kept open while the other cases run.
 *
 *   fcgi_fuzz [--cases N] [--seed S] [--stalled K] [--wait-ms T] [--kinds 0,3,..] SOCKET
 *
 * --kinds runs only the listed kinds (numbers in the order of the TAP
 * lines, from 0), to reproduce one kind of failure.
 * After every case the server must have closed the connection of a peer
 * that half-closed (no wedged connection), and must answer GET /health
 * within T ms (it is alive and has a free worker). At the end every stalled
 * peer is closed and /metrics must come back to 0 running and 0 waiting
 * sequences (nothing leaked). Output: one TAP line per kind of case, then
 * the leak check; exit status 0 when all passed. Deterministic for a seed.
 */
#include <fastcgi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "tools/fcgi_peer.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static size_t rn(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

static const char *addr;
static int wait_ms = 10000;

enum {
    K_SPLIT, K_PADDED, K_INTERLEAVED, /* well-formed: must be answered 200 */
    K_MUTATE, K_TRUNCATE, K_VERSION, K_TYPES, K_LENGTHS, K_HUGE_PAIRS, K_ENDLESS_PARAMS, K_GARBAGE,
    K_MGMT_FLOOD, K_ABORT,
    K_STALL_INPUT, K_STALL_OUTPUT, /* kept open */
    K_N
};
static const char *KIND_NAME[K_N] = {
    "well-formed request split at random points", "well-formed request with random padding",
    "well-formed request interleaved with other request ids", "mutated request (random bytes changed)",
    "truncated request", "wrong protocol version", "unknown and misplaced record types",
    "content and padding lengths that lie", "huge name-value lengths (PARAMS, GET_VALUES)",
    "PARAMS stream that never ends", "random bytes", "management-record flood", "ABORT_REQUEST mid-request",
    "peer that never finishes its request (kept open)", "peer that never reads a long stream (kept open)"};

/* Well-formed requests go to /tokenize: answered at once, without an engine
 * slot (the stalled peers may hold them all). Hostile ones start from a
 * completion request, so the mutated ones that survive reach the engine. */
static const char *BODY = "{\"prompt\":\"Hi there\"}";
static const char *GEN_BODY = "{\"prompt\":\"Hi\",\"max_tokens\":1,\"temperature\":0}";

static void valid_request(fbuf_t *b, int id, const char *body)
{
    fbuf_request(b, id, "POST", body == BODY ? "/tokenize" : "/v1/completions", NULL, body, strlen(body));
}

/* A request whose records get random padding (0..255, non-zero bytes). */
static void padded_request(fbuf_t *b, int id)
{
    fbuf_t plain = {0};
    valid_request(&plain, id, BODY);
    size_t pos = 0;
    while (pos + 8 <= plain.n) {
        const uint8_t *h = plain.p + pos;
        size_t len = ((size_t)h[4] << 8) | h[5], pad = h[6];
        size_t newpad = rn(256);
        fbuf_rec_raw(b, 1, h[1], (h[2] << 8) | h[3], len, (int)newpad, h + 8, len, 0);
        for (size_t i = 0; i < newpad; i++) {
            uint8_t x = (uint8_t)rnd();
            fbuf_put(b, &x, 1);
        }
        pos += 8 + len + pad;
    }
    fbuf_free(&plain);
}

static void random_record(fbuf_t *b, int our_id)
{
    int ids[] = {0, our_id, 1 + (int)rn(65535)};
    uint8_t content[64];
    size_t len = rn(sizeof content);
    for (size_t i = 0; i < len; i++)
        content[i] = (uint8_t)rnd();
    fbuf_rec(b, (int)rn(256), ids[rn(3)], content, len);
}

/* Builds the bytes of one case; *keep says the peer is well-formed (wait
 * for the answer instead of half-closing). */
static void build(int kind, fbuf_t *b, bool *keep)
{
    int id = 1 + (int)rn(65535);
    *keep = false;
    fbuf_t v = {0};
    switch (kind) {
    case K_SPLIT:
        valid_request(b, id, BODY);
        *keep = true;
        break;
    case K_PADDED:
        padded_request(b, id);
        *keep = true;
        break;
    case K_INTERLEAVED: {
        uint8_t begin[8] = {0, FCGI_RESPONDER};
        fbuf_rec(b, FCGI_BEGIN_REQUEST, id, begin, 8);
        int other = id == 65535 ? 1 : id + 1;
        fbuf_rec(b, FCGI_BEGIN_REQUEST, other, begin, 8);
        fbuf_rec(b, FCGI_PARAMS, other, "\3\1abcx", 6);
        fbuf_t ps = {0};
        fbuf_pair(&ps, "REQUEST_METHOD", 14, "POST", 4);
        fbuf_pair(&ps, "REQUEST_URI", 11, "/tokenize", 9);
        fbuf_stream(b, FCGI_PARAMS, id, ps.p, ps.n);
        fbuf_free(&ps);
        fbuf_rec(b, FCGI_STDIN, other, "junk", 4);
        fbuf_rec(b, FCGI_ABORT_REQUEST, other, NULL, 0);
        fbuf_stream(b, FCGI_STDIN, id, BODY, strlen(BODY));
        *keep = true;
        break;
    }
    case K_MUTATE: {
        valid_request(b, id, GEN_BODY);
        int n = 1 + (int)rn(8);
        for (int i = 0; i < n && b->n; i++) {
            size_t at = rn(b->n);
            switch (rn(3)) {
            case 0: b->p[at] = (uint8_t)rnd(); break;
            case 1: b->p[at] ^= (uint8_t)(1u << rn(8)); break;
            default: memmove(b->p + at, b->p + at + 1, b->n - at - 1); b->n--; break;
            }
        }
        break;
    }
    case K_TRUNCATE:
        valid_request(b, id, GEN_BODY);
        b->n = rn(b->n);
        break;
    case K_VERSION:
        valid_request(b, id, GEN_BODY);
        b->p[0] = (uint8_t)(2 + rn(254)); /* the first record's version */
        break;
    case K_TYPES: {
        int n = 1 + (int)rn(6);
        for (int i = 0; i < n; i++)
            random_record(b, id);
        valid_request(&v, id, BODY);
        fbuf_put(b, v.p, v.n);
        for (int i = 0; i < n; i++)
            random_record(b, id);
        break;
    }
    case K_LENGTHS: {
        uint8_t begin[8] = {0, FCGI_RESPONDER};
        fbuf_rec(b, FCGI_BEGIN_REQUEST, id, begin, 8);
        size_t real = rn(100), claimed = real + 1 + rn(65535 - real);
        uint8_t junk[100];
        for (size_t i = 0; i < real; i++)
            junk[i] = (uint8_t)rnd();
        if (rn(2))
            fbuf_rec_raw(b, 1, FCGI_PARAMS, id, claimed, 0, junk, real, 0);
        else
            fbuf_rec_raw(b, 1, FCGI_PARAMS, id, real, 255, junk, real, rn(255));
        break;
    }
    case K_HUGE_PAIRS: {
        uint8_t pair[16] = {0x80 | (uint8_t)rn(128), (uint8_t)rnd(), (uint8_t)rnd(), (uint8_t)rnd(),
                            0x80 | (uint8_t)rn(128), (uint8_t)rnd(), (uint8_t)rnd(), (uint8_t)rnd(),
                            'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'};
        if (rn(2)) {
            fbuf_rec(b, FCGI_GET_VALUES, 0, pair, sizeof pair);
        } else {
            uint8_t begin[8] = {0, FCGI_RESPONDER};
            fbuf_rec(b, FCGI_BEGIN_REQUEST, id, begin, 8);
            fbuf_rec(b, FCGI_PARAMS, id, pair, sizeof pair);
            fbuf_rec(b, FCGI_PARAMS, id, NULL, 0);
        }
        break;
    }
    case K_ENDLESS_PARAMS: {
        uint8_t begin[8] = {0, FCGI_RESPONDER};
        fbuf_rec(b, FCGI_BEGIN_REQUEST, id, begin, 8);
        static uint8_t chunk[60000];
        for (size_t i = 0; i < sizeof chunk; i++)
            chunk[i] = (uint8_t)('a' + i % 26);
        for (int i = 0; i < 20; i++) /* 1.2 MB: past the 1 MiB PARAMS limit */
            fbuf_rec(b, FCGI_PARAMS, id, chunk, sizeof chunk);
        break;
    }
    case K_GARBAGE: {
        size_t n = 1 + rn(4096);
        for (size_t i = 0; i < n; i++) {
            uint8_t x = (uint8_t)rnd();
            fbuf_put(b, &x, 1);
        }
        break;
    }
    case K_MGMT_FLOOD: {
        int n = 100 + (int)rn(10000);
        for (int i = 0; i < n; i++) {
            if (rn(2))
                fbuf_rec(b, FCGI_GET_VALUES, 0, "\x0e\x00" "FCGI_MAX_CONNS" "\x0f\x00" "FCGI_MPXS_CONNS", 33);
            else
                fbuf_rec(b, 12 + (int)rn(200), 0, NULL, 0);
        }
        break;
    }
    case K_ABORT: {
        valid_request(&v, id, GEN_BODY);
        size_t cut = rn(v.n);
        fbuf_put(b, v.p, cut);
        fbuf_rec(b, FCGI_ABORT_REQUEST, id, NULL, 0);
        fbuf_put(b, v.p + cut, v.n - cut);
        break;
    }
    case K_STALL_INPUT:
        valid_request(b, id, GEN_BODY);
        b->n = 1 + rn(b->n - 1);
        break;
    case K_STALL_OUTPUT:
        valid_request(b, id, "{\"prompt\":\"Hi\",\"max_tokens\":1500,\"stream\":true,\"logprobs\":5}");
        break;
    }
    fbuf_free(&v);
}

/* The request id of a case's first record. */
static int id_of(const fbuf_t *b)
{
    return b->n >= 4 ? (b->p[2] << 8) | b->p[3] : 0;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* Sends b in random pieces (for the split kind), else at once. */
static int send_case(int fd, const fbuf_t *b, bool split)
{
    size_t pos = 0;
    while (pos < b->n) {
        size_t k = split ? 1 + rn(b->n - pos < 64 ? b->n - pos : 64) : b->n - pos;
        if (fcgi_peer_send(fd, b->p + pos, k, wait_ms) < 0)
            return -1;
        pos += k;
        if (split && rn(8) == 0)
            usleep(1000);
    }
    return 0;
}

/* GET path straight over FastCGI; the reply status (or -1). */
static int get(const char *path, fcgi_reply_t *r)
{
    int fd = fcgi_peer_connect(addr);
    if (fd < 0)
        return -1;
    fbuf_t b = {0};
    fbuf_request(&b, 1, "GET", path, NULL, "", 0);
    int st = -1;
    if (fcgi_peer_send(fd, b.p, b.n, wait_ms) == 0 && fcgi_peer_read_reply(fd, r, wait_ms) == 0 && r->ended)
        st = fcgi_reply_status(r);
    fbuf_free(&b);
    close(fd);
    return st;
}

static bool healthy(void)
{
    fcgi_reply_t r = {0};
    int st = get("/health", &r);
    fcgi_reply_free(&r);
    return st == 200;
}

static long metric(const char *text, const char *name)
{
    const char *p = text;
    size_t l = strlen(name);
    while ((p = strstr(p, name))) {
        if ((p == text || p[-1] == '\n') && (p[l] == '{' || p[l] == ' ')) {
            const char *sp = strchr(p, ' ');
            return sp ? atol(sp + 1) : -1;
        }
        p += l;
    }
    return -1;
}

int main(int argc, char **argv)
{
    int cases = 300, max_stalled = 16;
    bool only[K_N], filtered = false;
    memset(only, 0, sizeof only);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cases") && i + 1 < argc)
            cases = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            rng = strtoull(argv[++i], NULL, 0) | 1;
        else if (!strcmp(argv[i], "--stalled") && i + 1 < argc)
            max_stalled = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--wait-ms") && i + 1 < argc)
            wait_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--kinds") && i + 1 < argc) {
            filtered = true;
            for (char *p = argv[++i]; *p;) {
                long k = strtol(p, &p, 10);
                if (k >= 0 && k < K_N)
                    only[k] = true;
                while (*p == ',')
                    p++;
            }
        }
        else if (argv[i][0] == '-' || addr) {
            fprintf(stderr, "usage: fcgi_fuzz [--cases N] [--seed S] [--stalled K] [--wait-ms T] [--kinds 0,3,..] "
                            "SOCKET\n");
            return 2;
        } else {
            addr = argv[i];
        }
    }
    if (!addr || max_stalled < 1 || max_stalled > 4096) {
        fprintf(stderr, "fcgi_fuzz: need a socket (and 1 <= --stalled <= 4096)\n");
        return 2;
    }
    tap_diag("fcgi_fuzz: %d cases, seed 0x%llx, up to %d stalled peers", cases, (unsigned long long)rng,
             max_stalled);
    int runs[K_N] = {0}, fails[K_N] = {0};
    int *stalled = malloc((size_t)max_stalled * sizeof *stalled), n_stalled = 0, next_stall = 0;
    for (int i = 0; i < max_stalled; i++)
        stalled[i] = -1;
    char first_fail[K_N][160];
    memset(first_fail, 0, sizeof first_fail);
    bool alive = true;
    for (int c = 0; c < cases && alive; c++) {
        int kind = c % K_N;
        if (filtered && !only[kind])
            continue;
        fbuf_t b = {0};
        bool keep;
        build(kind, &b, &keep);
        runs[kind]++;
        const char *why = NULL;
        int fd = fcgi_peer_connect(addr);
        if (fd < 0) {
            why = "cannot connect";
        } else if (send_case(fd, &b, kind == K_SPLIT) < 0 && keep) {
            why = "the server stopped reading a well-formed request";
        } else if (kind == K_STALL_INPUT || kind == K_STALL_OUTPUT) {
            if (stalled[next_stall] >= 0) { /* the pool is full: the oldest goes */
                close(stalled[next_stall]);
                n_stalled--;
            }
            stalled[next_stall] = fd;
            next_stall = (next_stall + 1) % max_stalled;
            n_stalled++;
            fd = -1;
        } else if (keep) {
            fcgi_reply_t r = {.want_id = id_of(&b)};
            if (fcgi_peer_read_reply(fd, &r, wait_ms) < 0 || !r.ended)
                why = "no complete answer to a well-formed request";
            else if (fcgi_reply_status(&r) != 200)
                why = "a well-formed request was not answered 200";
            fcgi_reply_free(&r);
        } else {
            /* a hostile peer half-closes: the server must close too */
            shutdown(fd, SHUT_WR);
            fcgi_reply_t r = {0};
            fcgi_reader_t st = {0};
            double t0 = now_ms();
            while (!r.closed && now_ms() - t0 < wait_ms)
                fcgi_peer_read_some(fd, &st, &r, 100);
            if (!r.closed)
                why = "the server kept a half-closed hostile connection open";
            fcgi_reply_free(&r);
        }
        if (fd >= 0)
            close(fd);
        fbuf_free(&b);
        if (!why && !healthy())
            why = "GET /health failed after the case";
        if (why) {
            if (!fails[kind]++)
                snprintf(first_fail[kind], sizeof first_fail[kind], "case %d: %s", c, why);
            alive = healthy();
        }
    }
    for (int k = 0; k < K_N; k++) {
        if (filtered && !only[k])
            continue;
        tap_ok(fails[k] == 0, "%s: %d cases, %d failed", KIND_NAME[k], runs[k], fails[k]);
        if (fails[k])
            tap_diag("first failure: %s", first_fail[k]);
    }
    /* the stalled peers go away: their sequences must be freed */
    tap_diag("closing %d stalled peers", n_stalled);
    for (int i = 0; i < max_stalled; i++)
        if (stalled[i] >= 0)
            close(stalled[i]);
    free(stalled);
    long running = -1, waiting = -1;
    double t0 = now_ms();
    do {
        fcgi_reply_t r = {0};
        if (get("/metrics", &r) == 200) {
            running = metric((const char *)r.out.p, "llm_num_requests_running");
            waiting = metric((const char *)r.out.p, "llm_num_requests_waiting");
        }
        fcgi_reply_free(&r);
        if (running == 0 && waiting == 0)
            break;
        usleep(50000);
    } while (now_ms() - t0 < 30000);
    tap_ok(running == 0 && waiting == 0, "after the fuzzing: %ld running and %ld waiting sequences", running,
           waiting);
    tap_ok(healthy(), "the server still answers");
    return tap_done();
}
