/* dfa.c - subset construction, minimization, canonical numbering and the
 * product constructions of dfa.h.
 *
 * Every construction produces a "raw" table (any numbering, maybe with
 * useless states) and hands it to finalize(): trim (states that cannot reach
 * an accepting state become dead), Moore minimization (blocks split by
 * accept/tag, refined on successor blocks until stable), byte classes
 * recomputed from identical columns, breadth-first renumbering from the
 * start state, content hash. Equal languages give equal tables.
 */
#include "grammar/automata/dfa.h"
#include "grammar/core/scratch.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grammar/automata/nfa.h"

#include <pthread.h>

static gr_dfa_t *dfa_build(const gr_ex_t *e, bool counted, const gr_limits_t *lim, lf_err_t *err);

/* scratch slots (scratch.h): hopcroft, finalize, determinize, glue */
enum { SL_HOP = 0, SL_FIN = 13, SL_DET = 23, SL_GLUE = 28 };

#define DFA_DEFAULT_MAX 200000

int64_t gr_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int64_t dfa_max(const gr_limits_t *lim)
{
    return lim && lim->max_dfa_states > 0 ? lim->max_dfa_states : DFA_DEFAULT_MAX;
}

static bool past_deadline(const gr_limits_t *lim)
{
    return lim && lim->deadline_ns && gr_now_ns() > lim->deadline_ns;
}

void gr_dfa_free(gr_dfa_t *d)
{
    if (!d)
        return;
    if (__atomic_fetch_sub(&d->extra_refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    free(d->next);
    free(d->accept);
    free(d->tag);
    free(d);
}

/* ---- raw tables and finalize ---------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xFF51AFD7ED558CCDull;
    return h ^ (h >> 33);
}

/* d->h1, d->h2 from the classes, the table, the accepting states and the
 * tags. Four independent lanes per hash, so the multiplies overlap. */
static void content_hash(gr_dfa_t *d)
{
    uint64_t a[4] = {mix(0xA5A5, (uint64_t)d->n_states), mix(0x5A5A, (uint64_t)d->n_classes), 0x1234, 0x4321};
    uint64_t b[4] = {mix(0x5A5A, (uint64_t)d->n_classes), mix(0xA5A5, (uint64_t)d->n_states), 0x8765, 0x5678};
    for (int by = 0; by < 256; by += 32) /* eight classes per mix */
        for (int l = 0; l < 4; l++) {
            uint64_t v;
            memcpy(&v, d->cls + by + 8 * l, 8);
            a[l] = mix(a[l], v);
            b[l] = mix(b[l], v * 31u + 7u);
        }
    int64_t nt = (int64_t)d->n_states * d->n_classes, i = 0;
    const uint32_t *t = (const uint32_t *)d->next;
    for (; i + 8 <= nt; i += 8) /* two entries per mix */
        for (int l = 0; l < 4; l++) {
            uint64_t v = t[i + 2 * l] | (uint64_t)t[i + 2 * l + 1] << 32;
            a[l] = mix(a[l], v);
            b[l] = mix(b[l], v ^ 0xDEADBEEFDEADBEEFull);
        }
    for (; i < nt; i++) {
        a[0] = mix(a[0], t[i]);
        b[0] = mix(b[0], (uint64_t)t[i] ^ 0xDEADBEEFu);
    }
    for (int32_t s = 0; s < d->n_states; s += 8) { /* eight states per mix */
        uint64_t v = 0;
        for (int32_t k = 0; k < 8 && s + k < d->n_states; k++)
            v |= (uint64_t)(d->accept[s + k] | (d->tag ? d->tag[s + k] << 1 : 0)) << (8 * k);
        a[(s >> 3) & 3] = mix(a[(s >> 3) & 3], v);
        b[(s >> 3) & 3] = mix(b[(s >> 3) & 3], v + 3);
    }
    d->h1 = mix(mix(mix(a[0], a[1]), a[2]), a[3]);
    d->h2 = mix(mix(mix(b[0], b[1]), b[2]), b[3]);
}

typedef struct {
    int32_t n, cap, ncls;
    uint8_t cls[256];
    int32_t *next;
    uint8_t *accept, *tag;
    bool has_tag;
    int32_t start;
} raw_t;

static bool raw_grow(raw_t *r, int32_t need)
{
    if (need <= r->cap)
        return true;
    int32_t cap = r->cap ? r->cap : 64;
    while (cap < need)
        cap *= 2;
    int32_t *nx = realloc(r->next, (size_t)cap * (size_t)r->ncls * sizeof *nx);
    if (nx)
        r->next = nx;
    uint8_t *a = realloc(r->accept, (size_t)cap);
    if (a)
        r->accept = a;
    uint8_t *t = realloc(r->tag, (size_t)cap);
    if (t)
        r->tag = t;
    if (!nx || !a || !t)
        return false;
    r->cap = cap;
    return true;
}

static void raw_free(raw_t *r)
{
    free(r->next);
    free(r->accept);
    free(r->tag);
}


/* Hash table of int32 ids keyed by caller-computed hashes. */
typedef struct {
    int32_t *slot;
    uint64_t *hash;
    size_t mask;
    size_t n;
} idmap_t;

static bool idmap_init(idmap_t *m, size_t want)
{
    size_t cap = 64;
    while (cap < want * 2)
        cap *= 2;
    m->slot = malloc(cap * sizeof *m->slot);
    m->hash = malloc(cap * sizeof *m->hash);
    if (!m->slot || !m->hash) {
        free(m->slot);
        free(m->hash);
        return false;
    }
    memset(m->slot, 0xff, cap * sizeof *m->slot);
    m->mask = cap - 1;
    m->n = 0;
    return true;
}

static void idmap_free(idmap_t *m)
{
    free(m->slot);
    free(m->hash);
}

static bool idmap_grow(idmap_t *m)
{
    size_t cap = (m->mask + 1) * 2;
    int32_t *s = malloc(cap * sizeof *s);
    uint64_t *h = malloc(cap * sizeof *h);
    if (!s || !h) {
        free(s);
        free(h);
        return false;
    }
    memset(s, 0xff, cap * sizeof *s);
    for (size_t i = 0; i <= m->mask; i++) {
        if (m->slot[i] < 0)
            continue;
        size_t j = m->hash[i] & (cap - 1);
        while (s[j] >= 0)
            j = (j + 1) & (cap - 1);
        s[j] = m->slot[i];
        h[j] = m->hash[i];
    }
    free(m->slot);
    free(m->hash);
    m->slot = s;
    m->hash = h;
    m->mask = cap - 1;
    return true;
}

/* Hopcroft's partition refinement over the live states of r plus one dead
 * sink (index n): blocks start split by (accepting, tag), and every
 * (block, class) splitter refines the blocks of its predecessors. Writes
 * the block of each live state into block[] (-1 for dead ones) and the
 * number of blocks into *nb. O(classes * n log n). */
static bool hopcroft(const raw_t *r, const int32_t *live, bool tags, int32_t *block, int32_t *nb, const gr_limits_t *lim,
                     lf_err_t *err)
{
    int32_t n = r->n, nc = r->ncls, N = n + 1, D = n;
    size_t NC = (size_t)N * (size_t)nc + 1, I = sizeof(int32_t);
    int32_t *inv_start = gr_scratch_zero(SL_HOP, NC * I);
    int32_t *inv = gr_scratch(SL_HOP + 1, NC * I);
    int32_t *elems = gr_scratch(SL_HOP + 2, (size_t)N * I), *pos = gr_scratch(SL_HOP + 3, (size_t)N * I);
    int32_t *blk = gr_scratch(SL_HOP + 4, (size_t)N * I), *bstart = gr_scratch(SL_HOP + 5, ((size_t)N + 1) * I);
    int32_t *bend = gr_scratch(SL_HOP + 6, ((size_t)N + 1) * I), *mcount = gr_scratch_zero(SL_HOP + 7, ((size_t)N + 1) * I);
    int32_t *touched = gr_scratch(SL_HOP + 8, ((size_t)N + 1) * I), *copy = gr_scratch(SL_HOP + 9, (size_t)N * I);
    int32_t *wl = gr_scratch(SL_HOP + 10, NC * 2 * I);
    uint8_t *inw = gr_scratch_zero(SL_HOP + 11, NC);
    int32_t *fill = gr_scratch(SL_HOP + 12, NC * I);
    bool ok = false;
    if (!inv_start || !inv || !elems || !pos || !blk || !bstart || !bend || !mcount || !touched || !copy || !wl || !inw ||
        !fill) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory minimizing an automaton");
        goto done;
    }
#define TGT(s, k) ((s) == D ? D : (r->next[(size_t)(s) * nc + (k)] >= 0 ? r->next[(size_t)(s) * nc + (k)] : D))
    /* inverse transitions, CSR by (class, target) */
    for (int32_t s = 0; s < N; s++) {
        if (s < n && !live[s])
            continue;
        for (int32_t k = 0; k < nc; k++)
            inv_start[(size_t)k * N + TGT(s, k) + 1]++;
    }
    for (size_t i = 1; i <= (size_t)nc * N; i++)
        inv_start[i] += inv_start[i - 1];
    memcpy(fill, inv_start, NC * sizeof *fill);
    for (int32_t s = 0; s < N; s++) {
        if (s < n && !live[s])
            continue;
        for (int32_t k = 0; k < nc; k++) {
            size_t key = (size_t)k * N + TGT(s, k);
            inv[fill[key]++] = s;
        }
    }
    /* initial blocks: key = accept + 2 * tag for live states, D alone */
    int32_t nblocks = 0, m = 0;
    int32_t first_of_key[8];
    for (int k = 0; k < 8; k++)
        first_of_key[k] = -1;
    for (int key = 0; key < 8; key++) {
        int32_t b = -1;
        for (int32_t s = 0; s < n; s++) {
            if (!live[s])
                continue;
            int sk = (r->accept[s] ? 1 : 0) + (tags ? 2 * r->tag[s] : 0);
            if (sk != key)
                continue;
            if (b < 0) {
                b = nblocks++;
                bstart[b] = m;
                first_of_key[key] = b;
            }
            pos[s] = m;
            elems[m++] = s;
            blk[s] = b;
        }
        if (b >= 0)
            bend[b] = m;
    }
    int32_t dblk = nblocks++;
    bstart[dblk] = m;
    pos[D] = m;
    elems[m++] = D;
    blk[D] = dblk;
    bend[dblk] = m;
    int32_t wn = 0;
    for (int32_t b = 0; b < nblocks; b++)
        for (int32_t k = 0; k < nc; k++) {
            wl[wn++] = b;
            wl[wn++] = k;
            inw[(size_t)b * nc + k] = 1;
        }
    int64_t steps = 0;
    while (wn > 0) {
        int32_t k = wl[--wn], B = wl[--wn];
        inw[(size_t)B * nc + k] = 0;
        if ((++steps & 1023) == 0 && past_deadline(lim)) {
            lf_err_set(err, LF_ERR_UNSUPPORTED, "grammar too complex: the compile time limit was hit");
            goto done;
        }
        int32_t nb_copy = bend[B] - bstart[B], nt = 0;
        memcpy(copy, elems + bstart[B], (size_t)nb_copy * sizeof *copy);
        for (int32_t i = 0; i < nb_copy; i++) {
            int32_t t = copy[i];
            size_t key = (size_t)k * N + t;
            for (int32_t e = inv_start[key]; e < inv_start[key + 1]; e++) {
                int32_t s = inv[e], Y = blk[s];
                int32_t at = bstart[Y] + mcount[Y];
                if (pos[s] < at)
                    continue; /* already marked */
                /* swap s into the marked prefix of Y */
                int32_t other = elems[at];
                elems[at] = s;
                elems[pos[s]] = other;
                pos[other] = pos[s];
                pos[s] = at;
                if (mcount[Y]++ == 0)
                    touched[nt++] = Y;
            }
        }
        for (int32_t i = 0; i < nt; i++) {
            int32_t Y = touched[i], cnt = mcount[Y], size = bend[Y] - bstart[Y];
            mcount[Y] = 0;
            if (cnt == size)
                continue;
            int32_t Z = nblocks++;
            bstart[Z] = bstart[Y];
            bend[Z] = bstart[Y] + cnt;
            bstart[Y] += cnt;
            for (int32_t p = bstart[Z]; p < bend[Z]; p++)
                blk[elems[p]] = Z;
            for (int32_t q = 0; q < nc; q++) {
                int32_t add = inw[(size_t)Y * nc + q] || cnt <= size - cnt ? Z : Y;
                if (!inw[(size_t)add * nc + q]) {
                    inw[(size_t)add * nc + q] = 1;
                    wl[wn++] = add;
                    wl[wn++] = q;
                }
            }
        }
    }
#undef TGT
    /* compact block ids of live states */
    int32_t *map = touched; /* reuse */
    for (int32_t b = 0; b < nblocks; b++)
        map[b] = -1;
    int32_t cnt = 0;
    for (int32_t s = 0; s < n; s++) {
        if (!live[s]) {
            block[s] = -1;
            continue;
        }
        int32_t b = blk[s];
        if (map[b] < 0)
            map[b] = cnt++;
        block[s] = map[b];
    }
    *nb = cnt;
    (void)first_of_key;
    (void)dblk;
    ok = true;
done:
    return ok;
}

/* Moore minimization + class recomputation + BFS numbering. */
static gr_dfa_t *finalize(raw_t *r, bool keep_tags, bool minimize, const gr_limits_t *lim, lf_err_t *err)
{
    int32_t n = r->n, nc = r->ncls;
    size_t N1 = ((size_t)n + 1) * sizeof(int32_t), E1 = ((size_t)n * (size_t)nc + 1) * sizeof(int32_t);
    gr_dfa_t *d = calloc(1, sizeof *d);
    int32_t *live = gr_scratch_zero(SL_FIN, N1);
    int32_t *block = gr_scratch(SL_FIN + 1, N1);
    int32_t *queue = gr_scratch(SL_FIN + 2, N1);
    int32_t *newid = gr_scratch(SL_FIN + 3, N1);
    /* reverse edges for liveness */
    int32_t *rfirst = gr_scratch(SL_FIN + 4, N1);
    int32_t *rnext = gr_scratch(SL_FIN + 5, E1);
    int32_t *rfrom = gr_scratch(SL_FIN + 6, E1);
    bool ok = d && live && block && queue && newid && rfirst && rnext && rfrom;
    if (!ok) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory minimizing an automaton");
        goto fail;
    }
    for (int32_t s = 0; s < n; s++)
        rfirst[s] = -1;
    int32_t ne = 0;
    for (int32_t s = 0; s < n; s++)
        for (int32_t c = 0; c < nc; c++) {
            int32_t t = r->next[(size_t)s * nc + c];
            if (t >= 0) {
                rfrom[ne] = s;
                rnext[ne] = rfirst[t];
                rfirst[t] = ne++;
            }
        }
    int32_t qh = 0, qt = 0;
    for (int32_t s = 0; s < n; s++)
        if (r->accept[s]) {
            live[s] = 1;
            queue[qt++] = s;
        }
    while (qh < qt) {
        int32_t t = queue[qh++];
        for (int32_t e = rfirst[t]; e >= 0; e = rnext[e])
            if (!live[rfrom[e]]) {
                live[rfrom[e]] = 1;
                queue[qt++] = rfrom[e];
            }
    }
    if (!live[r->start]) { /* empty language */
        d->n_states = 0;
        d->n_classes = 1;
        goto done_ok;
    }
    for (int32_t s = 0; s < n; s++)
        for (int32_t c = 0; c < nc; c++) {
            int32_t *t = &r->next[(size_t)s * nc + c];
            if (*t >= 0 && !live[*t])
                *t = -1;
        }
    /* Hopcroft refinement (or every live state its own block); dead states
     * get block -1 */
    int32_t nb = 0;
    if (!minimize) {
        for (int32_t s = 0; s < n; s++)
            block[s] = live[s] ? nb++ : -1;
    } else if (!hopcroft(r, live, keep_tags && r->has_tag, block, &nb, lim, err)) {
        goto fail;
    }
    /* raw classes in order of their first byte (canonical iteration order) */
    int32_t *rep = gr_scratch(SL_FIN + 7, ((size_t)nb + 1) * sizeof *rep);
    int cls_order[256], ncls_raw = 0;
    {
        bool seen[256] = {false};
        for (int by = 0; by < 256; by++)
            if (!seen[r->cls[by]]) {
                seen[r->cls[by]] = true;
                cls_order[ncls_raw++] = r->cls[by];
            }
    }
    if (!rep) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory minimizing an automaton");
        goto fail;
    }
    for (int32_t b = 0; b < nb; b++)
        rep[b] = -1;
    for (int32_t s = 0; s < n; s++)
        if (block[s] >= 0 && rep[block[s]] < 0)
            rep[block[s]] = s;
    for (int32_t b = 0; b < nb; b++)
        newid[b] = -1;
    /* BFS numbering over blocks from the start block, bytes in order */
    qh = qt = 0;
    newid[block[r->start]] = qt;
    queue[qt++] = block[r->start];
    while (qh < qt) {
        int32_t b = queue[qh++], s = rep[b];
        for (int k = 0; k < ncls_raw; k++) {
            int32_t t = r->next[(size_t)s * nc + cls_order[k]];
            if (t >= 0 && newid[block[t]] < 0) {
                newid[block[t]] = qt;
                queue[qt++] = block[t];
            }
        }
    }
    int32_t ns = qt;
    if (ns > dfa_max(lim)) {
        lf_err_set(err, LF_ERR_UNSUPPORTED, "grammar too large: the limit of %lld states per automaton was hit",
                   (long long)dfa_max(lim));
        goto fail;
    }
    /* byte classes: raw classes with identical columns merge */
    {
        int32_t *col = gr_scratch(SL_FIN + 8, ((size_t)ns * (size_t)nc + 1) * sizeof *col);
        uint64_t *ch = gr_scratch(SL_FIN + 9, ((size_t)nc + 1) * sizeof *ch);
        if (!col || !ch) {
            lf_err_set(err, LF_ERR_NOMEM, "out of memory minimizing an automaton");
            goto fail;
        }
        for (int32_t k = 0; k < nc; k++) {
            /* a cheap bucket hash (columns that match are then compared) */
            uint64_t h = 0x51ED;
            for (int32_t i = 0; i < ns; i++) {
                int32_t t = r->next[(size_t)rep[queue[i]] * nc + k];
                int32_t v = t >= 0 ? newid[block[t]] : -1;
                col[(size_t)k * ns + i] = v;
                h += ((uint64_t)(uint32_t)v + 0x9E37u) * (0xFF51AFD7ED558CCDull ^ ((uint64_t)i << 17));
            }
            ch[k] = h;
        }
        int newcls[256], first_raw[256], ncls = 0;
        for (int k = 0; k < nc; k++)
            newcls[k] = -1;
        for (int q = 0; q < ncls_raw; q++) {
            int k = cls_order[q], found = -1;
            for (int m = 0; m < ncls && found < 0; m++) {
                int o = first_raw[m];
                if (ch[o] == ch[k] && !memcmp(col + (size_t)o * ns, col + (size_t)k * ns, (size_t)ns * sizeof *col))
                    found = m;
            }
            if (found < 0) {
                found = ncls++;
                first_raw[found] = k;
            }
            newcls[k] = found;
        }
        for (int by = 0; by < 256; by++)
            d->cls[by] = (uint8_t)newcls[r->cls[by]];
        d->n_states = ns;
        d->n_classes = ncls;
        d->next = malloc((size_t)ns * (size_t)ncls * sizeof *d->next);
        d->accept = malloc((size_t)ns);
        d->tag = keep_tags && r->has_tag ? malloc((size_t)ns) : NULL;
        if (!d->next || !d->accept || (keep_tags && r->has_tag && !d->tag)) {
            lf_err_set(err, LF_ERR_NOMEM, "out of memory minimizing an automaton");
            goto fail;
        }
        for (int32_t i = 0; i < ns; i++) {
            int32_t s = rep[queue[i]];
            d->accept[i] = r->accept[s] ? 1 : 0;
            if (d->tag)
                d->tag[i] = r->tag[s];
            for (int m = 0; m < ncls; m++)
                d->next[(size_t)i * ncls + m] = col[(size_t)first_raw[m] * ns + i];
        }
    }
done_ok:
    content_hash(d);
    return d;
fail:
    gr_dfa_free(d);
    return NULL;
}

/* The state and time limits of a construction that has made n states and
 * is at state id; false with the error naming the limit. */
static bool within_limits(int64_t n, int32_t id, const gr_limits_t *lim, lf_err_t *err)
{
    if (n > dfa_max(lim) * 4) {
        lf_err_set(err, LF_ERR_UNSUPPORTED, "grammar too large: the limit of %lld states per automaton was hit",
                   (long long)dfa_max(lim));
        return false;
    }
    if ((id & 255) == 255 && past_deadline(lim)) {
        lf_err_set(err, LF_ERR_UNSUPPORTED, "grammar too complex: the compile time limit was hit");
        return false;
    }
    return true;
}

/* ---- subset construction --------------------------------------------- */

typedef struct {
    int32_t *pool;       /* concatenated sorted sets */
    size_t npool, cappool;
    size_t *off;         /* per DFA state */
    int32_t *len;
    int32_t n, cap;
    idmap_t map;
} sets_t;

static uint64_t set_hash(const int32_t *v, int32_t n)
{
    uint64_t h = mix(0x77, (uint64_t)n);
    for (int32_t i = 0; i < n; i++)
        h = mix(h, (uint64_t)v[i]);
    return h;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Returns the id of the set (inserting it), -1 on OOM. *fresh set when new. */
static int32_t sets_get(sets_t *S, const int32_t *v, int32_t n, bool *fresh)
{
    uint64_t h = set_hash(v, n);
    size_t j = h & S->map.mask;
    while (S->map.slot[j] >= 0) {
        int32_t id = S->map.slot[j];
        if (S->map.hash[j] == h && S->len[id] == n && !memcmp(S->pool + S->off[id], v, (size_t)n * sizeof *v)) {
            *fresh = false;
            return id;
        }
        j = (j + 1) & S->map.mask;
    }
    if (S->n == S->cap) {
        int32_t cap = S->cap ? S->cap * 2 : 64;
        size_t *o = realloc(S->off, (size_t)cap * sizeof *o);
        if (o)
            S->off = o;
        int32_t *l = realloc(S->len, (size_t)cap * sizeof *l);
        if (l)
            S->len = l;
        if (!o || !l)
            return -1;
        S->cap = cap;
    }
    if (S->npool + (size_t)n > S->cappool) {
        size_t cap = S->cappool ? S->cappool * 2 : 1024;
        while (cap < S->npool + (size_t)n)
            cap *= 2;
        int32_t *p = realloc(S->pool, cap * sizeof *p);
        if (!p)
            return -1;
        S->pool = p;
        S->cappool = cap;
    }
    memcpy(S->pool + S->npool, v, (size_t)n * sizeof *v);
    S->off[S->n] = S->npool;
    S->len[S->n] = n;
    S->npool += (size_t)n;
    S->map.slot[j] = S->n;
    S->map.hash[j] = h;
    *fresh = true;
    int32_t id = S->n++;
    if (++S->map.n * 2 > S->map.mask && !idmap_grow(&S->map))
        return -1;
    return id;
}

/* Epsilon closure of v[0..n) in place (grows into buf, sorted). */
static int32_t closure(const gr_nfa_t *nfa, int32_t *buf, int32_t n, uint32_t *stamp, uint32_t mark)
{
    int32_t top = n;
    for (int32_t i = 0; i < n; i++)
        stamp[buf[i]] = mark;
    for (int32_t i = 0; i < top; i++) {
        int32_t s = buf[i];
        for (int32_t e = nfa->first[s]; e >= 0; e = nfa->e[e].next) {
            const gr_nfa_edge_t *ed = &nfa->e[e];
            if (ed->lo > ed->hi && stamp[ed->to] != mark) {
                stamp[ed->to] = mark;
                buf[top++] = ed->to;
            }
        }
    }
    qsort(buf, (size_t)top, sizeof *buf, cmp_i32);
    return top;
}

static gr_dfa_t *determinize(const gr_nfa_t *nfa, bool keep_tags, const gr_limits_t *lim, lf_err_t *err)
{
    raw_t r = {0};
    sets_t S = {0};
    int32_t nn = nfa->n;
    int32_t *buf = gr_scratch(SL_DET, ((size_t)nn + 1) * sizeof *buf);
    uint32_t *stamp = gr_scratch_zero(SL_DET + 1, ((size_t)nn + 1) * sizeof *stamp);
    int32_t *cstart = NULL, *ccount = NULL, *cbuf = NULL;
    gr_dfa_t *out = NULL;
    uint32_t mark = 0;
    if (!buf || !stamp || !idmap_init(&S.map, 256))
        goto oom;
    /* byte classes from edge boundaries */
    uint8_t cut[257] = {0};
    cut[0] = 1;
    for (int32_t e = 0; e < nfa->ne; e++)
        if (nfa->e[e].lo <= nfa->e[e].hi) {
            cut[nfa->e[e].lo] = 1;
            cut[nfa->e[e].hi + 1] = 1;
        }
    int ncls = -1;
    for (int b = 0; b < 256; b++) {
        if (cut[b])
            ncls++;
        r.cls[b] = (uint8_t)ncls;
    }
    r.ncls = ++ncls;
    r.has_tag = keep_tags;
    cstart = gr_scratch(SL_DET + 2, (size_t)ncls * sizeof *cstart);
    ccount = gr_scratch(SL_DET + 3, (size_t)ncls * sizeof *ccount);
    if (!cstart || !ccount)
        goto oom;
    buf[0] = nfa->start;
    int32_t n0 = closure(nfa, buf, 1, stamp, ++mark);
    bool fresh;
    if (sets_get(&S, buf, n0, &fresh) < 0)
        goto oom;
    size_t cbcap = 1024;
    cbuf = gr_scratch(SL_DET + 4, cbcap * sizeof *cbuf);
    if (!cbuf)
        goto oom;
    for (int32_t id = 0; id < S.n; id++) {
        if (!within_limits(S.n, id, lim, err))
            goto fail;
        if (!raw_grow(&r, id + 1))
            goto oom;
        /* gather targets per class */
        size_t need = 0;
        const int32_t *set = S.pool + S.off[id];
        int32_t sn = S.len[id];
        bool acc = false;
        int tag = -1;
        for (int c = 0; c < ncls; c++)
            ccount[c] = 0;
        for (int32_t i = 0; i < sn; i++) {
            int32_t s = set[i];
            if (s == nfa->accept)
                acc = true;
            int t = nfa->tag[s];
            tag = tag < 0 ? t : tag == t ? tag : GR_TAG_OUT;
            for (int32_t e = nfa->first[s]; e >= 0; e = nfa->e[e].next) {
                const gr_nfa_edge_t *ed = &nfa->e[e];
                if (ed->lo <= ed->hi)
                    for (int c = r.cls[ed->lo]; c <= r.cls[ed->hi]; c++)
                        ccount[c]++;
            }
        }
        r.accept[id] = acc;
        r.tag[id] = (uint8_t)(tag < 0 ? GR_TAG_OUT : tag);
        for (int c = 0; c < ncls; c++) {
            cstart[c] = (int32_t)need;
            need += (size_t)ccount[c];
            ccount[c] = 0;
        }
        if (need > cbcap) {
            while (cbcap < need)
                cbcap *= 2;
            if (!(cbuf = gr_scratch(SL_DET + 4, cbcap * sizeof *cbuf)))
                goto oom; /* (its content is rebuilt below) */
        }
        for (int32_t i = 0; i < sn; i++) {
            int32_t s = set[i];
            for (int32_t e = nfa->first[s]; e >= 0; e = nfa->e[e].next) {
                const gr_nfa_edge_t *ed = &nfa->e[e];
                if (ed->lo <= ed->hi)
                    for (int c = r.cls[ed->lo]; c <= r.cls[ed->hi]; c++)
                        cbuf[cstart[c] + ccount[c]++] = ed->to;
            }
        }
        for (int c = 0; c < ncls; c++) {
            int32_t k = 0;
            ++mark;
            for (int32_t i = 0; i < ccount[c]; i++) {
                int32_t t = cbuf[cstart[c] + i];
                if (stamp[t] != mark) {
                    stamp[t] = mark;
                    buf[k++] = t;
                }
            }
            int32_t tid = -1;
            if (k > 0) {
                k = closure(nfa, buf, k, stamp, ++mark);
                tid = sets_get(&S, buf, k, &fresh);
                if (tid < 0)
                    goto oom;
            }
            /* set pointer may have moved: re-read through S.off */
            set = S.pool + S.off[id];
            r.next[(size_t)id * ncls + c] = tid;
        }
    }
    r.n = S.n;
    r.start = 0;
    out = finalize(&r, keep_tags, true, lim, err);
    goto done;
oom:
    lf_err_set(err, LF_ERR_NOMEM, "out of memory building an automaton");
fail:
    out = NULL;
done:
    raw_free(&r);
    free(S.pool);
    free(S.off);
    free(S.len);
    idmap_free(&S.map);
    return out;
}

/* ---- process-wide cache of expression DFAs ------------------------------------ */

/* Structural hash of a regular expression (two independent 64-bit hashes). */
static void ex_hash(gr_ex_t *e, uint64_t *a, uint64_t *b)
{
    if (e->hashed) {
        *a = e->h1;
        *b = e->h2;
        return;
    }
    uint64_t h1 = mix(0x1000 + (uint64_t)e->kind, 0x77), h2 = mix(0x2000 + (uint64_t)e->kind, 0x99);
    uint64_t x, y;
    switch (e->kind) {
    case GR_EX_BYTES:
        for (uint32_t i = 0; i < e->n; i++) {
            h1 = mix(h1, e->bytes[i]);
            h2 = mix(h2, (uint64_t)e->bytes[i] * 131u + 7u);
        }
        break;
    case GR_EX_CHARS:
        for (size_t i = 0; i < e->cs.n; i++) {
            h1 = mix(mix(h1, e->cs.r[i].lo), e->cs.r[i].hi);
            h2 = mix(mix(h2, e->cs.r[i].hi + 5u), e->cs.r[i].lo + 3u);
        }
        break;
    case GR_EX_SEQ:
    case GR_EX_ALT:
        h1 = mix(h1, e->n);
        for (uint32_t i = 0; i < e->n; i++) {
            ex_hash(e->kids[i], &x, &y);
            h1 = mix(h1, x);
            h2 = mix(h2, y);
        }
        break;
    case GR_EX_REP:
    case GR_EX_JSTR:
        h1 = mix(mix(h1, (uint64_t)e->min), (uint64_t)e->max);
        h2 = mix(mix(h2, (uint64_t)e->max + 11u), (uint64_t)e->min + 13u);
        if (e->kid) {
            ex_hash(e->kid, &x, &y);
            h1 = mix(h1, x);
            h2 = mix(h2, y);
        }
        break;
    case GR_EX_DFA:
        h1 = mix(mix(mix(mix(h1, e->dfa->h1), e->dfa_counted), (uint64_t)e->min), (uint64_t)e->max);
        h2 = mix(mix(mix(mix(h2, e->dfa->h2), e->dfa_nullable), (uint64_t)e->max + 11u), (uint64_t)e->min + 13u);
        break;
    default:
        h1 = mix(h1, (uint64_t)e->ref * 17u + (uint64_t)e->token);
        break;
    }
    e->h1 = h1;
    e->h2 = h2;
    e->hashed = true;
    *a = h1;
    *b = h2;
}

typedef struct dcache_ent {
    uint64_t h1, h2;
    bool counted;
    gr_dfa_t *dfa;
    uint64_t used;
} dcache_ent_t;

#define DCACHE_SLOTS 4096
#define DCACHE_MAX_STATES 4000000
static dcache_ent_t dcache[DCACHE_SLOTS];
static int64_t dcache_states;
static uint64_t dcache_tick;
static pthread_mutex_t dcache_mu = PTHREAD_MUTEX_INITIALIZER;

static gr_dfa_t *dcache_get(uint64_t h1, uint64_t h2, bool counted)
{
    gr_dfa_t *d = NULL;
    pthread_mutex_lock(&dcache_mu);
    size_t j = (size_t)(h1 % DCACHE_SLOTS);
    for (int probe = 0; probe < 8; probe++, j = (j + 1) % DCACHE_SLOTS)
        if (dcache[j].dfa && dcache[j].h1 == h1 && dcache[j].h2 == h2 && dcache[j].counted == counted) {
            dcache[j].used = ++dcache_tick;
            d = gr_dfa_copy(dcache[j].dfa);
            break;
        }
    pthread_mutex_unlock(&dcache_mu);
    return d;
}

static void dcache_put(uint64_t h1, uint64_t h2, bool counted, const gr_dfa_t *d)
{
    if (d->n_states > 100000)
        return;
    gr_dfa_t *copy = gr_dfa_copy(d);
    if (!copy)
        return;
    pthread_mutex_lock(&dcache_mu);
    size_t j = (size_t)(h1 % DCACHE_SLOTS), victim = j;
    for (int probe = 0; probe < 8; probe++, j = (j + 1) % DCACHE_SLOTS) {
        if (!dcache[j].dfa) {
            victim = j;
            break;
        }
        if (dcache[j].used < dcache[victim].used)
            victim = j;
    }
    if (dcache[victim].dfa) {
        dcache_states -= dcache[victim].dfa->n_states;
        gr_dfa_free(dcache[victim].dfa);
    }
    dcache[victim] = (dcache_ent_t){h1, h2, counted, copy, ++dcache_tick};
    dcache_states += copy->n_states;
    /* over the budget: drop the least recently used until under it */
    while (dcache_states > DCACHE_MAX_STATES) {
        size_t lru = SIZE_MAX;
        for (size_t k = 0; k < DCACHE_SLOTS; k++)
            if (dcache[k].dfa && (lru == SIZE_MAX || dcache[k].used < dcache[lru].used))
                lru = k;
        if (lru == SIZE_MAX)
            break;
        dcache_states -= dcache[lru].dfa->n_states;
        gr_dfa_free(dcache[lru].dfa);
        dcache[lru].dfa = NULL;
    }
    pthread_mutex_unlock(&dcache_mu);
}

/* The concatenation p[0] p[1] ... p[n-1] glued without subset
 * construction: each piece keeps its states, and where a piece may end,
 * its accepting states also take the start transitions of the next piece
 * (and of the ones after it, while the pieces in between may be empty).
 * That is deterministic as long as no reachable state has two ways on one
 * byte (then where a piece ends is never in doubt); returns false when that
 * does not hold. On success (or OOM / a limit: *out NULL, err set) returns
 * true. One breadth-first pass numbers the reachable states canonically
 * (classes in order of their first byte) and fills the table; the result is
 * trimmed (every piece is) but neither minimized nor class-merged. */
static bool glue(gr_dfa_t *const *p, int np, const gr_limits_t *lim, lf_err_t *err, gr_dfa_t **out)
{
    *out = NULL;
    int32_t total = 0, off[17];
    bool empty = false;
    for (int i = 0; i < np; i++) {
        if (p[i]->tag)
            return false;
        empty = empty || p[i]->n_states == 0;
        off[i] = total;
        total += p[i]->n_states;
    }
    off[np] = total;
    if (empty) {
        if ((*out = calloc(1, sizeof **out)))
            (*out)->n_classes = 1;
        else
            lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return true;
    }
    /* combined byte classes (bytes alike in every piece), refined piece by
     * piece, then numbered in order of their first byte */
    uint8_t cls[256], rep[256];
    int ncls = p[0]->n_classes;
    memcpy(cls, p[0]->cls, 256);
    for (int i = 1; i < np; i++) {
        int16_t pair[256 * 16];
        int pc = p[i]->n_classes;
        if ((int64_t)ncls * pc > (int64_t)(sizeof pair / sizeof *pair))
            return false;
        memset(pair, 0xff, (size_t)ncls * (size_t)pc * sizeof *pair);
        int n2 = 0;
        for (int by = 0; by < 256; by++) {
            int16_t *q = &pair[cls[by] * pc + p[i]->cls[by]];
            if (*q < 0)
                *q = (int16_t)n2++;
            cls[by] = (uint8_t)*q;
        }
        ncls = n2;
    }
    {
        int16_t order[256];
        memset(order, 0xff, sizeof order);
        int n2 = 0;
        for (int by = 0; by < 256; by++) {
            if (order[cls[by]] < 0) {
                order[cls[by]] = (int16_t)n2;
                rep[n2++] = (uint8_t)by;
            }
            cls[by] = (uint8_t)order[cls[by]];
        }
    }
    /* the pieces an end of piece i may continue into: i + 1 .. last[i] */
    int last[16];
    bool ends[16]; /* piece i may end the whole (the pieces after it are nullable) */
    for (int i = 0; i < np; i++) {
        int l = i + 1;
        while (l < np && gr_dfa_nullable(p[l]))
            l++;
        last[i] = l < np ? l : np - 1;
        ends[i] = l >= np;
    }
    int32_t *newid = gr_scratch(SL_GLUE, ((size_t)total + 1) * sizeof *newid);
    int32_t *queue = gr_scratch(SL_GLUE + 1, ((size_t)total + 1) * sizeof *queue);
    int32_t *next = malloc(((size_t)total * (size_t)ncls + 1) * sizeof *next);
    uint8_t *accept = malloc((size_t)total + 1);
    gr_dfa_t *d = calloc(1, sizeof *d);
    bool ok = false;
    if (!newid || !queue || !next || !accept || !d) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        ok = true;
        goto out;
    }
    for (int32_t g = 0; g < total; g++)
        newid[g] = -1;
    /* per piece: its class of each combined class, and where an end of it
     * goes on each class (the start transitions of the pieces it may
     * continue into; two of them on one class: not gluable) */
    uint8_t *pcls = gr_scratch(SL_GLUE + 2, (size_t)np * (size_t)ncls);
    int32_t *cont = gr_scratch(SL_GLUE + 3, (size_t)np * (size_t)ncls * sizeof *cont);
    if (!pcls || !cont) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        ok = true;
        goto out;
    }
    for (int i = 0; i < np; i++)
        for (int c = 0; c < ncls; c++) {
            pcls[(size_t)i * ncls + c] = p[i]->cls[rep[c]];
            int32_t to = -1;
            for (int j = i + 1; j <= last[i]; j++) {
                int32_t u = gr_dfa_step(p[j], 0, rep[c]);
                if (u < 0)
                    continue;
                if (to >= 0)
                    goto out;
                to = off[j] + u;
            }
            cont[(size_t)i * ncls + c] = to;
        }
    int32_t qh = 0, qt = 0;
    newid[0] = qt;
    queue[qt++] = 0;
    while (qh < qt) {
        int32_t g = queue[qh], at = qh++;
        int i = 0;
        while (g >= off[i + 1])
            i++;
        const gr_dfa_t *x = p[i];
        int32_t s = g - off[i];
        bool acc = x->accept[s];
        int32_t *row = next + (size_t)at * ncls;
        const int32_t *xrow = x->next + (size_t)s * x->n_classes, *crow = cont + (size_t)i * ncls;
        const uint8_t *pc = pcls + (size_t)i * ncls;
        for (int c = 0; c < ncls; c++) {
            int32_t t = xrow[pc[c]];
            int32_t to = t >= 0 ? off[i] + t : -1;
            if (acc && crow[c] >= 0) {
                if (to >= 0) /* two ways on this byte */
                    goto out;
                to = crow[c];
            }
            if (to >= 0) {
                if (newid[to] < 0) {
                    newid[to] = qt;
                    queue[qt++] = to;
                }
                to = newid[to];
            }
            row[c] = to;
        }
        accept[at] = acc && ends[i];
    }
    ok = true;
    if (qt > dfa_max(lim)) {
        lf_err_set(err, LF_ERR_UNSUPPORTED, "grammar too large: the limit of %lld states per automaton was hit",
                   (long long)dfa_max(lim));
        goto out;
    }
    d->n_states = qt;
    d->n_classes = ncls;
    memcpy(d->cls, cls, 256);
    d->next = next;
    d->accept = accept;
    next = NULL;
    accept = NULL;
    content_hash(d);
    *out = d;
    d = NULL;
out:
    free(next);
    free(accept);
    gr_dfa_free(d);
    return ok;
}

/* Appends the only spelling of a code point inside a JSON string (what
 * the NFA's json_chars accepts) when it has one: printable, not '"', '\\'
 * or '/' (which may also be written escaped), not a surrogate. */
static bool single_spelling(uint32_t cp, uint8_t *out, int *len)
{
    if (cp < 0x20 || cp == '"' || cp == '\\' || cp == '/' || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
        return false;
    if (cp < 0x80) {
        out[(*len)++] = (uint8_t)cp;
    } else if (cp < 0x800) {
        out[(*len)++] = (uint8_t)(0xC0 | cp >> 6);
        out[(*len)++] = (uint8_t)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out[(*len)++] = (uint8_t)(0xE0 | cp >> 12);
        out[(*len)++] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[(*len)++] = (uint8_t)(0x80 | (cp & 0x3F));
    } else {
        out[(*len)++] = (uint8_t)(0xF0 | cp >> 18);
        out[(*len)++] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
        out[(*len)++] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[(*len)++] = (uint8_t)(0x80 | (cp & 0x3F));
    }
    return true;
}

enum { LIT_MAX = 4096 };

/* The byte string x stands for when its language is one string: literal
 * bytes, the empty string, or a JSON string of literal code points that
 * have a single spelling each. Writes it to out[LIT_MAX]; -1 otherwise. */
static int literal_of(const gr_ex_t *x, uint8_t *out)
{
    if (x->kind == GR_EX_EMPTY)
        return 0;
    if (x->kind == GR_EX_BYTES) {
        if (x->n > LIT_MAX)
            return -1;
        memcpy(out, x->bytes, x->n);
        return (int)x->n;
    }
    if (x->kind != GR_EX_JSTR || !x->kid || x->min > 0 || x->max >= 0)
        return -1;
    const gr_ex_t *const *cps = (const gr_ex_t *const *)&x->kid;
    uint32_t n = 1;
    if (x->kid->kind == GR_EX_SEQ) {
        cps = (const gr_ex_t *const *)x->kid->kids;
        n = x->kid->n;
    } else if (x->kid->kind == GR_EX_EMPTY) {
        n = 0;
    }
    if ((int64_t)n * 4 + 2 > LIT_MAX)
        return -1;
    int len = 0;
    out[len++] = '"';
    for (uint32_t i = 0; i < n; i++)
        if (cps[i]->kind != GR_EX_CHARS || cps[i]->cs.n != 1 || cps[i]->cs.r[0].lo != cps[i]->cs.r[0].hi ||
            !single_spelling(cps[i]->cs.r[0].lo, out, &len))
            return -1;
    out[len++] = '"';
    return len;
}

/* A literal or an alternation of literals (an enum, the known property
 * names of an object): their trie is already deterministic, so only
 * Hopcroft (suffixes the trie repeats) and the canonical numbering remain.
 * NULL with *fallback when e is not of that form or too large for this
 * path. */
static gr_dfa_t *literals_dfa(const gr_ex_t *e, const gr_limits_t *lim, lf_err_t *err, bool *fallback)
{
    *fallback = true;
    const gr_ex_t *const *lits = (const gr_ex_t *const *)&e;
    uint32_t n = 1;
    if (e->kind == GR_EX_ALT) {
        lits = (const gr_ex_t *const *)e->kids;
        n = e->n;
    }
    if (n > 4096)
        return NULL;
    uint8_t buf[LIT_MAX];
    int64_t total = 1;
    bool seen[256] = {false};
    for (uint32_t k = 0; k < n; k++) {
        int len = literal_of(lits[k], buf);
        if (len < 0)
            return NULL;
        total += len;
        for (int i = 0; i < len; i++)
            seen[buf[i]] = true;
    }
    if (total > 100000)
        return NULL;
    *fallback = false;
    /* one class per byte that occurs, one more for the others if any */
    raw_t r = {0};
    int ncls = 0;
    bool others = false;
    for (int by = 0; by < 256; by++)
        others = others || !seen[by];
    if (others)
        ncls = 1;
    for (int by = 0; by < 256; by++)
        r.cls[by] = seen[by] ? (uint8_t)ncls++ : 0;
    r.ncls = ncls;
    if (!raw_grow(&r, (int32_t)total)) {
        raw_free(&r);
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    r.n = 1;
    for (int c = 0; c < ncls; c++)
        r.next[c] = -1;
    r.accept[0] = 0;
    r.tag[0] = GR_TAG_OUT;
    for (uint32_t k = 0; k < n; k++) {
        int len = literal_of(lits[k], buf);
        int32_t st = 0;
        for (int i = 0; i < len; i++) {
            int32_t *to = &r.next[(size_t)st * ncls + r.cls[buf[i]]];
            if (*to < 0) {
                int32_t ns = r.n++;
                for (int c = 0; c < ncls; c++)
                    r.next[(size_t)ns * ncls + c] = -1;
                r.accept[ns] = 0;
                r.tag[ns] = GR_TAG_OUT;
                *to = ns;
            }
            st = *to;
        }
        r.accept[st] = 1;
    }
    r.start = 0;
    gr_dfa_t *d = finalize(&r, false, n > 1, lim, err);
    raw_free(&r);
    return d;
}

/* A sequence whose pieces glue (above): each piece's automaton comes from
 * the cache or is built on its own. NULL with *fallback when they do not
 * glue. */
static gr_dfa_t *seq_glued(const gr_ex_t *e, const gr_limits_t *lim, lf_err_t *err, bool *fallback)
{
    enum { MAX_PIECES = 16 };
    *fallback = e->n > MAX_PIECES;
    if (*fallback)
        return NULL;
    gr_dfa_t *p[MAX_PIECES];
    uint32_t n = 0;
    for (; n < e->n; n++)
        if (!(p[n] = gr_dfa_from_expr(e->kids[n], false, lim, err)))
            break;
    gr_dfa_t *d = NULL;
    if (n == e->n && !glue(p, (int)n, lim, err, &d))
        *fallback = true;
    for (uint32_t i = 0; i < n; i++)
        gr_dfa_free(p[i]);
    return d;
}

gr_dfa_t *gr_dfa_from_expr(const gr_ex_t *e, bool counted, const gr_limits_t *lim, lf_err_t *err)
{
    if (e->kind == GR_EX_DFA && !e->dfa_counted && !e->dfa->tag) /* already built */
        return gr_dfa_copy(e->dfa);
    uint64_t h1, h2;
    ex_hash((gr_ex_t *)e, &h1, &h2);
    gr_dfa_t *hit = dcache_get(h1, h2, counted);
    if (hit)
        return hit;
    bool fallback = true;
    gr_dfa_t *d = NULL;
    if (e->kind == GR_EX_SEQ && e->n >= 2)
        d = seq_glued(e, lim, err, &fallback);
    else if (e->kind == GR_EX_BYTES || e->kind == GR_EX_ALT || (e->kind == GR_EX_JSTR && !counted))
        d = literals_dfa(e, lim, err, &fallback);
    if (fallback)
        d = dfa_build(e, counted, lim, err);
    gr_scratch_trim();
    if (d)
        dcache_put(h1, h2, counted, d);
    return d;
}

static gr_dfa_t *dfa_build(const gr_ex_t *e, bool counted, const gr_limits_t *lim, lf_err_t *err)
{
    gr_nfa_t nfa;
    if (gr_nfa_build(&nfa, e, counted, lim, err) != LF_OK) {
        gr_nfa_free(&nfa);
        return NULL;
    }
    gr_dfa_t *d = determinize(&nfa, counted && e->kind == GR_EX_JSTR, lim, err);
    gr_nfa_free(&nfa);
    return d;
}

/* ---- products ---------------------------------------------------------- */

/* op 0: intersect, 1: subtract (a and not b). */
static gr_dfa_t *product(const gr_dfa_t *a, const gr_dfa_t *b, int op, const gr_limits_t *lim, lf_err_t *err)
{
    raw_t r = {0};
    idmap_t map = {0};
    int32_t *pa = NULL, *pb = NULL;
    int32_t np = 0, cap = 0;
    gr_dfa_t *out = NULL;
    if (a->n_states == 0 || (op == 0 && b->n_states == 0)) {
        if (op == 1 && a->n_states > 0)
            return gr_dfa_copy(a);
        gr_dfa_t *e = calloc(1, sizeof *e);
        if (e)
            e->n_classes = 1;
        return e;
    }
    /* combined classes */
    int pairs[256];
    int ncls = 0;
    for (int by = 0; by < 256; by++) {
        int key = a->cls[by] * 256 + b->cls[by], c = -1;
        for (int k = 0; k < by; k++)
            if (pairs[k] == key) {
                c = r.cls[k];
                break;
            }
        pairs[by] = key;
        if (c < 0)
            c = ncls++;
        r.cls[by] = (uint8_t)c;
    }
    r.ncls = ncls;
    uint8_t rep[256];
    for (int by = 255; by >= 0; by--)
        rep[r.cls[by]] = (uint8_t)by;
    r.has_tag = a->tag && b->tag;
    if (!idmap_init(&map, 256))
        goto oom;
    /* state (x, y): y == -1 means b is dead (only for subtract) */
#define PUSH(x, y, idout)                                                                    \
    do {                                                                                     \
        uint64_t h_ = mix((uint64_t)(uint32_t)(x), (uint64_t)(uint32_t)(y));                 \
        size_t j_ = h_ & map.mask;                                                           \
        idout = -1;                                                                          \
        while (map.slot[j_] >= 0) {                                                          \
            if (pa[map.slot[j_]] == (x) && pb[map.slot[j_]] == (y)) {                        \
                idout = map.slot[j_];                                                        \
                break;                                                                       \
            }                                                                                \
            j_ = (j_ + 1) & map.mask;                                                        \
        }                                                                                    \
        if (idout < 0) {                                                                     \
            if (np == cap) {                                                                 \
                cap = cap ? cap * 2 : 256;                                                   \
                int32_t *na_ = realloc(pa, (size_t)cap * sizeof *na_);                       \
                if (na_)                                                                     \
                    pa = na_;                                                                \
                int32_t *nb_ = realloc(pb, (size_t)cap * sizeof *nb_);                       \
                if (nb_)                                                                     \
                    pb = nb_;                                                                \
                if (!na_ || !nb_)                                                            \
                    goto oom;                                                                \
            }                                                                                \
            pa[np] = (x);                                                                    \
            pb[np] = (y);                                                                    \
            map.slot[j_] = np;                                                               \
            map.hash[j_] = h_;                                                               \
            idout = np++;                                                                    \
            if (++map.n * 2 > map.mask && !idmap_grow(&map))                                 \
                goto oom;                                                                    \
        }                                                                                    \
    } while (0)
    int32_t id0;
    PUSH(0, b->n_states > 0 ? 0 : -1, id0);
    (void)id0;
    for (int32_t id = 0; id < np; id++) {
        if (!within_limits(np, id, lim, err))
            goto fail;
        if (!raw_grow(&r, id + 1))
            goto oom;
        int32_t x = pa[id], y = pb[id];
        bool ax = a->accept[x], by_ = y >= 0 && b->accept[y];
        r.accept[id] = op == 0 ? (ax && by_) : (ax && !by_);
        r.tag[id] = a->tag ? a->tag[x] : GR_TAG_OUT;
        for (int c = 0; c < ncls; c++) {
            int32_t nx = gr_dfa_step(a, x, rep[c]);
            int32_t ny = y >= 0 ? gr_dfa_step(b, y, rep[c]) : -1;
            int32_t t = -1;
            if (nx >= 0 && (op == 1 || ny >= 0))
                PUSH(nx, ny, t);
            r.next[(size_t)id * ncls + c] = t;
        }
    }
#undef PUSH
    r.n = np;
    r.start = 0;
    out = finalize(&r, r.has_tag, true, lim, err);
    gr_scratch_trim();
    goto done;
oom:
    lf_err_set(err, LF_ERR_NOMEM, "out of memory building an automaton");
fail:
    out = NULL;
done:
    raw_free(&r);
    idmap_free(&map);
    free(pa);
    free(pb);
    return out;
}

gr_dfa_t *gr_dfa_intersect(const gr_dfa_t *a, const gr_dfa_t *b, const gr_limits_t *lim, lf_err_t *err)
{
    return product(a, b, 0, lim, err);
}

gr_dfa_t *gr_dfa_subtract(const gr_dfa_t *a, const gr_dfa_t *b, const gr_limits_t *lim, lf_err_t *err)
{
    return product(a, b, 1, lim, err);
}

gr_dfa_t *gr_dfa_copy(const gr_dfa_t *a)
{
    gr_dfa_t *d = (gr_dfa_t *)a;
    __atomic_add_fetch(&d->extra_refs, 1, __ATOMIC_RELAXED);
    return d;
}

gr_dfa_t *gr_dfa_nonempty(const gr_dfa_t *a, const gr_limits_t *lim, lf_err_t *err)
{
    if (!gr_dfa_nullable(a))
        return gr_dfa_copy(a);
    raw_t r = {0};
    r.ncls = a->n_classes;
    memcpy(r.cls, a->cls, 256);
    r.has_tag = a->tag != NULL;
    int32_t n = a->n_states;
    if (!raw_grow(&r, n + 1)) {
        raw_free(&r);
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    memcpy(r.next, a->next, (size_t)n * (size_t)a->n_classes * sizeof *r.next);
    memcpy(r.next + (size_t)n * a->n_classes, a->next, (size_t)a->n_classes * sizeof *r.next);
    memcpy(r.accept, a->accept, (size_t)n);
    r.accept[n] = 0;
    for (int32_t s = 0; s <= n; s++)
        r.tag[s] = a->tag ? a->tag[s < n ? s : 0] : GR_TAG_OUT;
    r.n = n + 1;
    r.start = n;
    gr_dfa_t *d = finalize(&r, r.has_tag, true, lim, err);
    gr_scratch_trim();
    raw_free(&r);
    return d;
}

gr_dfa_t *gr_dfa_from_table(int32_t n_states, const int32_t *next, const uint8_t *accept, int32_t start,
                            const gr_limits_t *lim, lf_err_t *err)
{
    raw_t r = {0};
    r.ncls = 256;
    for (int b = 0; b < 256; b++)
        r.cls[b] = (uint8_t)b;
    if (!raw_grow(&r, n_states + 1)) {
        raw_free(&r);
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    memcpy(r.next, next, (size_t)n_states * 256 * sizeof *r.next);
    memcpy(r.accept, accept, (size_t)n_states);
    memset(r.tag, 0, (size_t)n_states);
    r.n = n_states;
    r.start = start;
    gr_dfa_t *d = finalize(&r, false, true, lim, err);
    gr_scratch_trim();
    raw_free(&r);
    return d;
}

bool gr_dfa_equal(const gr_dfa_t *a, const gr_dfa_t *b)
{
    if (a->h1 != b->h1 || a->h2 != b->h2 || a->n_states != b->n_states || a->n_classes != b->n_classes ||
        memcmp(a->cls, b->cls, 256) || (!a->tag) != (!b->tag))
        return false;
    size_t nt = (size_t)a->n_states * (size_t)a->n_classes;
    if (nt && memcmp(a->next, b->next, nt * sizeof *a->next))
        return false;
    if (a->n_states && memcmp(a->accept, b->accept, (size_t)a->n_states))
        return false;
    return !a->tag || !a->n_states || !memcmp(a->tag, b->tag, (size_t)a->n_states);
}

bool gr_dfa_matches(const gr_dfa_t *d, const void *p, size_t n)
{
    if (d->n_states == 0)
        return false;
    const uint8_t *b = p;
    int32_t s = 0;
    for (size_t i = 0; i < n && s >= 0; i++)
        s = gr_dfa_step(d, s, b[i]);
    return s >= 0 && d->accept[s];
}

/* Strings of the language from state s, or -1 past GR_DFA_NARROW_MAX or on
 * a cycle. memo[s]: 0 not seen, -1 on the current path, else count + 1. */
static int32_t count_upto(const gr_dfa_t *d, int32_t s, int32_t *memo, const int *class_size)
{
    if (memo[s] != 0)
        return memo[s] > 0 ? memo[s] - 1 : -1;
    memo[s] = -1;
    int64_t v = d->accept[s];
    for (int32_t c = 0; c < d->n_classes; c++) {
        int32_t t = d->next[(size_t)s * d->n_classes + c];
        if (t < 0)
            continue;
        int32_t k = count_upto(d, t, memo, class_size);
        if (k < 0)
            return -1;
        v += (int64_t)class_size[c] * k;
        if (v > GR_DFA_NARROW_MAX)
            return -1;
    }
    memo[s] = (int32_t)v + 1;
    return (int32_t)v;
}

bool gr_dfa_narrow(const gr_dfa_t *d)
{
    enum { MAX_STATES = 2048 };
    int8_t known = __atomic_load_n(&d->narrow, __ATOMIC_RELAXED);
    if (known)
        return known == 1;
    bool narrow = d->n_states == 0;
    if (d->n_states > 0 && d->n_states <= MAX_STATES) {
        int class_size[256] = {0};
        for (int by = 0; by < 256; by++)
            class_size[d->cls[by]]++;
        int32_t memo[MAX_STATES];
        memset(memo, 0, (size_t)d->n_states * sizeof *memo);
        narrow = count_upto(d, 0, memo, class_size) >= 0;
    }
    __atomic_store_n(&((gr_dfa_t *)d)->narrow, (int8_t)(narrow ? 1 : 2), __ATOMIC_RELAXED);
    return narrow;
}
