/* vis_prompt.c - prompts with images (see vis_prompt.h). */
#include "engine/vision/vis_prompt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/vision/vis_internal.h"

struct vis_layout {
    const vis_model_t *v;
    const vocab_t *voc;
    bool mrope;
    /* marker strings tokenized like libmtmd's add_text(str, parse_special) */
    const char *beg, *end;      /* gemma3 / qwen */
    /* idefics3: tokens looked up by piece text */
    int32_t nl, nlnl, fake, global;
};

/* The first id whose text (special tokens rendered) is text: libmtmd's
 * lookup_token. -1 if none. */
static int32_t lookup_piece(const vocab_t *voc, const char *text)
{
    const size_t len = strlen(text);
    char buf[64];
    for (int32_t i = 0; i < vocab_n_tokens(voc); i++) {
        int n = vocab_token_to_piece(voc, i, true, buf, sizeof buf);
        if (n == (int)len && !memcmp(buf, text, len))
            return i;
    }
    return -1;
}

vis_layout_t *vis_layout_create(const vis_model_t *v, const vocab_t *voc, bool mrope, lf_err_t *err)
{
    vis_layout_t *L = calloc(1, sizeof *L);
    if (!L) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    L->v = v;
    L->voc = voc;
    L->mrope = mrope;
    switch (v->hp.proj) {
    case VIS_PROJ_GEMMA3:
        L->beg = "<start_of_image>";
        L->end = "<end_of_image>";
        break;
    case VIS_PROJ_QWEN25VL:
    case VIS_PROJ_QWEN3VL:
        L->beg = "<|vision_start|>";
        L->end = "<|vision_end|>";
        break;
    case VIS_PROJ_IDEFICS3: {
        L->nl = lookup_piece(voc, "\n");
        L->nlnl = lookup_piece(voc, "\n\n");
        L->fake = lookup_piece(voc, "<fake_token_around_image>");
        L->global = lookup_piece(voc, "<global-img>");
        const char *miss = L->nl < 0 ? "\\n" : L->nlnl < 0 ? "\\n\\n" : L->fake < 0 ? "<fake_token_around_image>"
                           : L->global < 0 ? "<global-img>" : NULL;
        if (miss) {
            lf_err_set(err, LF_ERR_INVALID, "the text model has no token '%s', which idefics3 images need", miss);
            free(L);
            return NULL;
        }
        break;
    }
    }
    return L;
}

void vis_layout_free(vis_layout_t *L)
{
    free(L);
}

typedef struct {
    vis_prompt_t *p;
    int32_t cap, cap_spans;
    lf_err_t *err;
} builder_t;

static bool push_tokens(builder_t *b, const int32_t *t, size_t n)
{
    vis_prompt_t *p = b->p;
    if (p->n + (int64_t)n > (1 << 24))
        return lf_err_set(b->err, LF_ERR_INVALID, "the prompt is too long"), false;
    if (p->n + (int32_t)n > b->cap) {
        int32_t cap = b->cap ? b->cap : 256;
        while (cap < p->n + (int32_t)n)
            cap *= 2;
        int32_t *nt = realloc(p->tokens, (size_t)cap * sizeof *nt);
        if (!nt)
            return lf_err_set(b->err, LF_ERR_NOMEM, "out of memory"), false;
        p->tokens = nt;
        b->cap = cap;
    }
    memcpy(p->tokens + p->n, t, n * sizeof *t);
    p->n += (int32_t)n;
    return true;
}

static bool push_text(builder_t *b, const vocab_t *voc, const char *s, size_t len)
{
    if (!len)
        return true;
    int32_t *ids = NULL;
    size_t n = 0;
    if (vocab_tokenize(voc, s, len, false, true, &ids, &n, b->err) != LF_OK)
        return false;
    bool ok = push_tokens(b, ids, n);
    free(ids);
    return ok;
}

/* The rows of array `array` of image `image`. */
static bool push_span(builder_t *b, const vis_array_t *a, int32_t image, int32_t array, bool bidir, bool mrope,
                      const uint8_t *hash)
{
    vis_prompt_t *p = b->p;
    if (p->n_spans == b->cap_spans) {
        int32_t cap = b->cap_spans ? 2 * b->cap_spans : 8;
        vis_span_t *ns = realloc(p->spans, (size_t)cap * sizeof *ns);
        if (!ns)
            return lf_err_set(b->err, LF_ERR_NOMEM, "out of memory"), false;
        p->spans = ns;
        b->cap_spans = cap;
    }
    vis_span_t *s = &p->spans[p->n_spans++];
    *s = (vis_span_t){.start = p->n, .n = a->n_tokens, .nx = mrope ? a->nx : a->n_tokens, .ny = mrope ? a->ny : 1,
                      .bidir = bidir, .image = image, .array = array};
    s->n_pos = mrope ? (s->nx > s->ny ? s->nx : s->ny) : s->n;
    /* placeholders: the content hash (FNV over it, the array and the row),
     * always negative */
    uint32_t h = 2166136261u;
    for (int i = 0; hash && i < 32; i++)
        h = (h ^ hash[i]) * 16777619u;
    h = (h ^ (uint32_t)array) * 16777619u;
    for (int32_t i = 0; i < a->n_tokens; i++) {
        const uint32_t r = ((h ^ (uint32_t)i) * 16777619u) & 0x3fffffffu;
        const int32_t t = -1 - (int32_t)r;
        if (!push_tokens(b, &t, 1))
            return false;
    }
    return true;
}

static bool push_image(builder_t *b, const vis_layout_t *L, const vis_prep_t *prep, int32_t image,
                       const uint8_t *hash)
{
    const vis_proj_t proj = L->v->hp.proj;
    if (proj != VIS_PROJ_IDEFICS3) {
        if (prep->n != 1)
            return lf_err_set(b->err, LF_ERR_INTERNAL, "expected one pixel array"), false;
        return push_text(b, L->voc, L->beg, strlen(L->beg)) &&
               push_span(b, &prep->a[0], image, 0, proj == VIS_PROJ_GEMMA3, L->mrope, hash) &&
               push_text(b, L->voc, L->end, strlen(L->end));
    }
    /* idefics3: tiles first (with their row/column markers), overview last */
    const int32_t gx = prep->grid_x, gy = prep->grid_y;
    if (prep->n != gx * gy + 1)
        return lf_err_set(b->err, LF_ERR_INTERNAL, "tiles do not match the grid"), false;
    for (int32_t y = 0; y < gy; y++) {
        for (int32_t x = 0; x < gx; x++) {
            char m[96];
            int len = snprintf(m, sizeof m, "<fake_token_around_image><row_%d_col_%d>", y + 1, x + 1);
            if (!push_text(b, L->voc, m, (size_t)len) ||
                !push_span(b, &prep->a[y * gx + x], image, y * gx + x, false, false, hash))
                return false;
        }
        if (y != gy - 1 && !push_tokens(b, &L->nl, 1))
            return false;
    }
    const int32_t ov[3] = {L->nlnl, L->fake, L->global};
    return push_tokens(b, ov, 3) && push_span(b, &prep->a[prep->n - 1], image, prep->n - 1, false, false, hash) &&
           push_tokens(b, &L->fake, 1);
}

lf_code_t vis_prompt_build(const vis_layout_t *L, const char *const *pieces, const size_t *lens, int32_t n_images,
                           const vis_prep_t *preps, const uint8_t (*hashes)[32], bool add_special,
                           vis_prompt_t *out, lf_err_t *err)
{
    memset(out, 0, sizeof *out);
    out->mrope = L->mrope;
    builder_t b = {out, 0, 0, err};
    bool ok = true;
    for (int32_t i = 0; ok && i <= n_images; i++) {
        ok = push_text(&b, L->voc, pieces[i], lens[i]);
        if (ok && i < n_images)
            ok = push_image(&b, L, &preps[i], i, hashes ? hashes[i] : NULL);
    }
    const vocab_t *voc = L->voc;
    if (ok && add_special && vocab_add_bos(voc) && vocab_bos(voc) >= 0) {
        const int32_t bos = vocab_bos(voc);
        ok = push_tokens(&b, &bos, 1);
        if (ok) {
            memmove(out->tokens + 1, out->tokens, (size_t)(out->n - 1) * sizeof *out->tokens);
            out->tokens[0] = bos;
            for (int32_t s = 0; s < out->n_spans; s++)
                out->spans[s].start++;
        }
    }
    if (ok && add_special && vocab_add_eos(voc) && vocab_eos(voc) >= 0) {
        const int32_t eos = vocab_eos(voc);
        ok = push_tokens(&b, &eos, 1);
    }
    if (!ok) {
        vis_prompt_free(out);
        return err ? err->code : LF_ERR_INVALID;
    }
    out->n_pos = out->n;
    for (int32_t s = 0; s < out->n_spans; s++)
        out->n_pos += out->spans[s].n_pos - out->spans[s].n;
    return LF_OK;
}

lf_code_t vis_prompt_from_text(const vis_layout_t *L, const char *text, size_t len, const char *marker,
                               const vis_prep_t *preps, const uint8_t (*hashes)[32], int32_t n_images,
                               bool images_first, bool add_special, vis_prompt_t *out, lf_err_t *err)
{
    memset(out, 0, sizeof *out);
    const size_t ml = strlen(marker);
    int32_t n_marks = 0;
    for (const char *q = text; ml && (q = memmem(q, len - (size_t)(q - text), marker, ml)); q += ml)
        n_marks++;
    if (n_marks == 0 && images_first && n_images > 0) {
        const char **pieces = calloc((size_t)n_images + 1, sizeof *pieces);
        size_t *lens = calloc((size_t)n_images + 1, sizeof *lens);
        lf_code_t rc = pieces && lens ? LF_OK : lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        if (rc == LF_OK) {
            for (int32_t i = 0; i < n_images; i++)
                pieces[i] = "";
            pieces[n_images] = text;
            lens[n_images] = len;
            rc = vis_prompt_build(L, pieces, lens, n_images, preps, hashes, add_special, out, err);
        }
        free(pieces);
        free(lens);
        return rc;
    }
    if (n_marks != n_images)
        return lf_err_set(err, LF_ERR_INVALID, "the prompt has %d image marker%s '%s' for %d image%s", n_marks,
                          n_marks == 1 ? "" : "s", marker, n_images, n_images == 1 ? "" : "s");
    const char **pieces = calloc((size_t)n_images + 1, sizeof *pieces);
    size_t *lens = calloc((size_t)n_images + 1, sizeof *lens);
    lf_code_t rc = pieces && lens ? LF_OK : lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    if (rc == LF_OK) {
        const char *q = text;
        for (int32_t i = 0; i < n_images; i++) {
            const char *m = memmem(q, len - (size_t)(q - text), marker, ml);
            pieces[i] = q;
            lens[i] = (size_t)(m - q);
            q = m + ml;
        }
        pieces[n_images] = q;
        lens[n_images] = len - (size_t)(q - text);
        rc = vis_prompt_build(L, pieces, lens, n_images, preps, hashes, add_special, out, err);
    }
    free(pieces);
    free(lens);
    return rc;
}

void vis_prompt_free(vis_prompt_t *p)
{
    if (!p)
        return;
    free(p->tokens);
    free(p->spans);
    memset(p, 0, sizeof *p);
}

int32_t vis_prompt_span_at(const vis_prompt_t *p, int32_t pos)
{
    int32_t lo = 0, hi = p->n_spans - 1;
    while (lo <= hi) {
        const int32_t mid = (lo + hi) / 2;
        const vis_span_t *s = &p->spans[mid];
        if (pos < s->start)
            hi = mid - 1;
        else if (pos >= s->start + s->n)
            lo = mid + 1;
        else
            return mid;
    }
    return -1;
}

void vis_prompt_chunk(const vis_prompt_t *p, int32_t pos, int32_t *start, int32_t *end, bool *text)
{
    const int32_t s = vis_prompt_span_at(p, pos);
    if (s >= 0) {
        *start = p->spans[s].start;
        *end = p->spans[s].start + p->spans[s].n;
        *text = false;
        return;
    }
    int32_t a = 0, b = p->n;
    for (int32_t i = 0; i < p->n_spans; i++) {
        const vis_span_t *sp = &p->spans[i];
        if (sp->start + sp->n <= pos && sp->start + sp->n > a)
            a = sp->start + sp->n;
        if (sp->start > pos && sp->start < b)
            b = sp->start;
    }
    *start = a;
    *end = b;
    *text = true;
}

/* rope offset before span s (sum of the earlier spans' n_pos - n) */
static int32_t dpos_before(const vis_prompt_t *p, int32_t s)
{
    int32_t d = 0;
    for (int32_t i = 0; i < s; i++)
        d += p->spans[i].n_pos - p->spans[i].n;
    return d;
}

void vis_prompt_row(const vis_prompt_t *p, int32_t pos, const float *const *span_embd, int32_t n_out, fwd_mm_t *mm)
{
    memset(mm, 0, sizeof *mm);
    const int32_t s = vis_prompt_span_at(p, pos);
    if (s < 0) {
        /* a text cell: the rope offset of the spans before it */
        int32_t k = 0;
        while (k < p->n_spans && p->spans[k].start < pos)
            k++;
        mm->dpos = dpos_before(p, k);
        return;
    }
    const vis_span_t *sp = &p->spans[s];
    const int32_t i = pos - sp->start;
    mm->embd = span_embd[s] + (int64_t)i * n_out;
    mm->dpos = dpos_before(p, s);
    if (p->mrope) {
        /* every row at the span's first rope position, plus its grid row
         * and column in the other components */
        mm->dpos -= i;
        mm->my = (int16_t)(i / sp->nx);
        mm->mx = (int16_t)(i % sp->nx);
    }
    if (sp->bidir)
        mm->attn_end = sp->start + sp->n;
}

int32_t vis_prompt_dpos_end(const vis_prompt_t *p)
{
    return p->n_pos - p->n;
}

lf_code_t vis_prompt_eval(fwd_t *f, int32_t seq, const vis_prompt_t *p, const float *const *span_embd,
                          int32_t n_out, lf_err_t *err)
{
    const int32_t B = fwd_max_batch(f);
    fwd_tok_t *toks = malloc((size_t)B * sizeof *toks);
    fwd_mm_t *mm = malloc((size_t)B * sizeof *mm);
    lf_code_t rc = toks && mm ? LF_OK : lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    for (int32_t pos = fwd_seq_len(f, seq); rc == LF_OK && pos < p->n;) {
        int32_t cs, ce;
        bool text;
        vis_prompt_chunk(p, pos, &cs, &ce, &text);
        if (!text && p->spans[vis_prompt_span_at(p, pos)].bidir && ce - cs > B) {
            rc = lf_err_set(err, LF_ERR_INVALID, "an image of %d rows does not fit a batch of %d", ce - cs, B);
            break;
        }
        const int32_t m = ce - pos < B ? ce - pos : B;
        for (int32_t i = 0; i < m; i++) {
            const int32_t q = pos + i;
            vis_prompt_row(p, q, span_embd, n_out, &mm[i]);
            toks[i] = (fwd_tok_t){.token = mm[i].embd ? 0 : p->tokens[q], .seq = seq, .pos = q,
                                  .logits = q == p->n - 1,
                                  .prompt = fwd_prompt_order_chunk(f, p->n, cs, ce, text, q)};
        }
        rc = fwd_decode_mm(f, toks, mm, m, err);
        pos += m;
    }
    free(toks);
    free(mm);
    return rc;
}
