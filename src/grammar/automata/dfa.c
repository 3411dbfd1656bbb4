/* dfa.c - the automaton core of dfa.h: finalize (trim, Hopcroft
 * minimization, canonical numbering, content hash), reference counting,
 * the product constructions and the queries. The constructions from
 * expressions are in dfa_build.c.
 *
 * Every construction produces a "raw" table (any numbering, maybe useless
 * states) and hands it to dfa_finalize(): trim (states that cannot reach an
 * accepting state become dead), Hopcroft minimization (blocks split by
 * accept/tag, refined until stable), byte classes recomputed from identical
 * columns, breadth-first renumbering from the start state, content hash.
 * Equal languages give equal tables.
 */
#include "grammar/automata/dfa_impl.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DFA_DEFAULT_MAX 200000

int64_t gr_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int64_t dfa_max_states(const gr_limits_t *lim)
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

/* d->h1, d->h2 from the classes, the table, the accepting states and the
 * tags. Four independent lanes per hash, so the multiplies overlap. */
void dfa_content_hash(gr_dfa_t *d)
{
    uint64_t a[4] = {dfa_mix(0xA5A5, (uint64_t)d->n_states), dfa_mix(0x5A5A, (uint64_t)d->n_classes), 0x1234, 0x4321};
    uint64_t b[4] = {dfa_mix(0x5A5A, (uint64_t)d->n_classes), dfa_mix(0xA5A5, (uint64_t)d->n_states), 0x8765, 0x5678};
    for (int by = 0; by < 256; by += 32) /* eight classes per mix */
        for (int l = 0; l < 4; l++) {
            uint64_t v;
            memcpy(&v, d->cls + by + 8 * l, 8);
            a[l] = dfa_mix(a[l], v);
            b[l] = dfa_mix(b[l], v * 31u + 7u);
        }
    int64_t nt = (int64_t)d->n_states * d->n_classes, i = 0;
    const uint32_t *t = (const uint32_t *)d->next;
    for (; i + 8 <= nt; i += 8) /* two entries per mix */
        for (int l = 0; l < 4; l++) {
            uint64_t v = t[i + 2 * l] | (uint64_t)t[i + 2 * l + 1] << 32;
            a[l] = dfa_mix(a[l], v);
            b[l] = dfa_mix(b[l], v ^ 0xDEADBEEFDEADBEEFull);
        }
    for (; i < nt; i++) {
        a[0] = dfa_mix(a[0], t[i]);
        b[0] = dfa_mix(b[0], (uint64_t)t[i] ^ 0xDEADBEEFu);
    }
    for (int32_t s = 0; s < d->n_states; s += 8) { /* eight states per mix */
        uint64_t v = 0;
        for (int32_t k = 0; k < 8 && s + k < d->n_states; k++)
            v |= (uint64_t)(d->accept[s + k] | (d->tag ? d->tag[s + k] << 1 : 0)) << (8 * k);
        a[(s >> 3) & 3] = dfa_mix(a[(s >> 3) & 3], v);
        b[(s >> 3) & 3] = dfa_mix(b[(s >> 3) & 3], v + 3);
    }
    d->h1 = dfa_mix(dfa_mix(dfa_mix(a[0], a[1]), a[2]), a[3]);
    d->h2 = dfa_mix(dfa_mix(dfa_mix(b[0], b[1]), b[2]), b[3]);
}


bool dfa_raw_grow(raw_t *r, int32_t need)
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

void dfa_raw_free(raw_t *r)
{
    free(r->next);
    free(r->accept);
    free(r->tag);
}



bool dfa_idmap_init(idmap_t *m, size_t want)
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

void dfa_idmap_free(idmap_t *m)
{
    free(m->slot);
    free(m->hash);
}

bool dfa_idmap_grow(idmap_t *m)
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
gr_dfa_t *dfa_finalize(raw_t *r, bool keep_tags, bool minimize, const gr_limits_t *lim, lf_err_t *err)
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
    if (ns > dfa_max_states(lim)) {
        lf_err_set(err, LF_ERR_UNSUPPORTED, "grammar too large: the limit of %lld states per automaton was hit",
                   (long long)dfa_max_states(lim));
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
    dfa_content_hash(d);
    return d;
fail:
    gr_dfa_free(d);
    return NULL;
}

/* The state and time limits of a construction that has made n states and
 * is at state id; false with the error naming the limit. */
bool dfa_within_limits(int64_t n, int32_t id, const gr_limits_t *lim, lf_err_t *err)
{
    if (n > dfa_max_states(lim) * 4) {
        lf_err_set(err, LF_ERR_UNSUPPORTED, "grammar too large: the limit of %lld states per automaton was hit",
                   (long long)dfa_max_states(lim));
        return false;
    }
    if ((id & 255) == 255 && past_deadline(lim)) {
        lf_err_set(err, LF_ERR_UNSUPPORTED, "grammar too complex: the compile time limit was hit");
        return false;
    }
    return true;
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
    if (!dfa_idmap_init(&map, 256))
        goto oom;
    /* state (x, y): y == -1 means b is dead (only for subtract) */
#define PUSH(x, y, idout)                                                                    \
    do {                                                                                     \
        uint64_t h_ = dfa_mix((uint64_t)(uint32_t)(x), (uint64_t)(uint32_t)(y));                 \
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
            if (++map.n * 2 > map.mask && !dfa_idmap_grow(&map))                                 \
                goto oom;                                                                    \
        }                                                                                    \
    } while (0)
    int32_t id0;
    PUSH(0, b->n_states > 0 ? 0 : -1, id0);
    (void)id0;
    for (int32_t id = 0; id < np; id++) {
        if (!dfa_within_limits(np, id, lim, err))
            goto fail;
        if (!dfa_raw_grow(&r, id + 1))
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
    out = dfa_finalize(&r, r.has_tag, true, lim, err);
    gr_scratch_trim();
    goto done;
oom:
    lf_err_set(err, LF_ERR_NOMEM, "out of memory building an automaton");
fail:
    out = NULL;
done:
    dfa_raw_free(&r);
    dfa_idmap_free(&map);
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
    if (!dfa_raw_grow(&r, n + 1)) {
        dfa_raw_free(&r);
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
    gr_dfa_t *d = dfa_finalize(&r, r.has_tag, true, lim, err);
    gr_scratch_trim();
    dfa_raw_free(&r);
    return d;
}

gr_dfa_t *gr_dfa_from_table(int32_t n_states, const int32_t *next, const uint8_t *accept, int32_t start,
                            const gr_limits_t *lim, lf_err_t *err)
{
    raw_t r = {0};
    r.ncls = 256;
    for (int b = 0; b < 256; b++)
        r.cls[b] = (uint8_t)b;
    if (!dfa_raw_grow(&r, n_states + 1)) {
        dfa_raw_free(&r);
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    memcpy(r.next, next, (size_t)n_states * 256 * sizeof *r.next);
    memcpy(r.accept, accept, (size_t)n_states);
    memset(r.tag, 0, (size_t)n_states);
    r.n = n_states;
    r.start = start;
    gr_dfa_t *d = dfa_finalize(&r, false, true, lim, err);
    gr_scratch_trim();
    dfa_raw_free(&r);
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
