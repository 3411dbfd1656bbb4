/* engine_stub.c - a tiny deterministic stand-in for the model, vocabulary
 * and forward pass, linked into tests/e2e/llm-fcgi-stub so the HTTP layer
 * can be tested end to end quickly and exactly, independent of the engine.
 *
 * Vocabulary: 0 <unk>, 1 <s>, 2 </s> (EOS, control), 3+b for byte b.
 * "Model": after feeding token t at position p the most likely next token is
 * byte STORY[p % len], except after '!' where it is EOS. STORY holds a
 * multi-byte character so streamed text crosses UTF-8 boundaries.
 * LLM_STUB_DELAY_MS slows every fwd_decode (disconnect/concurrency tests);
 * LLM_STUB_FAIL_LOAD=1 makes model_load fail.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/forward.h"
#include "engine/model.h"
#include "engine/vocab.h"

static const char STORY[] = "Once upon a time, a caf\xc3\xa9 cat sang. ";
#define STUB_NV 259

struct vocab { int dummy; };
struct model { model_hparams_t hp; vocab_t v; };
struct fwd { int32_t n_seq, n_ctx, max_batch; int32_t *len; float *logits; int32_t n_logits; };

model_t *model_load(const char *path, lf_err_t *err)
{
    const char *f = getenv("LLM_STUB_FAIL_LOAD");
    if (!path || !*path || (f && *f == '1')) {
        lf_err_set(err, LF_ERR_IO, "%s: cannot open model", path ? path : "");
        return NULL;
    }
    model_t *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    strcpy(m->hp.arch, "stub");
    strcpy(m->hp.name, "stub");
    m->hp.n_vocab = STUB_NV;
    m->hp.n_ctx_train = 512;
    m->hp.n_layer = 1;
    return m;
}
void model_free(model_t *m) { free(m); }
const model_hparams_t *model_hparams(const model_t *m) { return &m->hp; }
const vocab_t *model_vocab(const model_t *m) { return &m->v; }
const gguf_file_t *model_gguf(const model_t *m) { (void)m; return NULL; }
const char *model_chat_template(const model_t *m) { (void)m; return NULL; }

vocab_type_t vocab_type(const vocab_t *v) { (void)v; return VOCAB_TYPE_SPM; }
const char *vocab_pre_name(const vocab_t *v) { (void)v; return "default"; }
int32_t vocab_n_tokens(const vocab_t *v) { (void)v; return STUB_NV; }
int32_t vocab_bos(const vocab_t *v) { (void)v; return 1; }
int32_t vocab_eos(const vocab_t *v) { (void)v; return 2; }
bool vocab_add_bos(const vocab_t *v) { (void)v; return true; }
bool vocab_add_eos(const vocab_t *v) { (void)v; return false; }
bool vocab_is_eog(const vocab_t *v, int32_t id) { (void)v; return id == 2; }
bool vocab_is_control(const vocab_t *v, int32_t id) { (void)v; return id >= 0 && id < 3; }
const char *vocab_token_text(const vocab_t *v, int32_t id)
{
    (void)v;
    static const char *names[] = {"<unk>", "<s>", "</s>"};
    return id >= 0 && id < 3 ? names[id] : "";
}
int32_t vocab_find(const vocab_t *v, const char *text, size_t len)
{
    (void)v;
    if (len == 1)
        return 3 + (unsigned char)text[0];
    return -1;
}
lf_code_t vocab_tokenize(const vocab_t *v, const char *text, size_t len, bool add_special,
                         bool parse_special, int32_t **ids, size_t *n, lf_err_t *err)
{
    (void)v; (void)parse_special;
    int32_t *out = malloc((len + 1) * sizeof *out);
    if (!out)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    size_t k = 0;
    if (add_special)
        out[k++] = 1;
    for (size_t i = 0; i < len; i++)
        out[k++] = 3 + (unsigned char)text[i];
    *ids = out;
    *n = k;
    return LF_OK;
}
int vocab_token_to_piece(const vocab_t *v, int32_t id, bool special, char *buf, size_t cap)
{
    (void)v;
    if (id < 0 || id >= STUB_NV)
        return -1;
    if (id < 3) {
        const char *t = special ? vocab_token_text(v, id) : "";
        size_t l = strlen(t);
        if (cap)
            memcpy(buf, t, l < cap ? l : cap);
        return (int)l;
    }
    if (cap)
        buf[0] = (char)(id - 3);
    return 1;
}
void vocab_detok_init(vocab_detok_t *d, const vocab_t *v, bool special)
{
    memset(d, 0, sizeof *d);
    d->vocab = v;
    d->special = special;
}
static size_t utf8_need(unsigned char c)
{
    return c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
}
int vocab_detok_push(vocab_detok_t *d, int32_t id, char *out, size_t cap)
{
    char piece[16];
    int pl = vocab_token_to_piece(d->vocab, id, d->special, piece, sizeof piece);
    if (pl < 0)
        return -1;
    size_t w = 0;
    for (int i = 0; i < pl && i < (int)sizeof piece; i++) {
        d->pending[d->n_pending++] = piece[i];
        if (d->n_pending >= utf8_need((unsigned char)d->pending[0]) || d->n_pending >= 4) {
            for (size_t k = 0; k < d->n_pending && w < cap; k++)
                out[w++] = d->pending[k];
            d->n_pending = 0;
        }
    }
    return (int)w;
}
int vocab_detok_flush(vocab_detok_t *d, char *out, size_t cap)
{
    size_t w = 0;
    if (d->n_pending && cap >= 3) {
        memcpy(out, "\xef\xbf\xbd", 3);
        w = 3;
    }
    d->n_pending = 0;
    return (int)w;
}

fwd_t *fwd_create(const model_t *m, const fwd_opts_t *o, lf_err_t *err)
{
    (void)m;
    fwd_t *f = calloc(1, sizeof *f);
    if (!f) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    f->n_seq = o->n_seq > 0 ? o->n_seq : 1;
    f->n_ctx = o->n_ctx > 0 ? o->n_ctx : 512;
    f->max_batch = o->max_batch > 0 ? o->max_batch : 512;
    f->len = calloc((size_t)f->n_seq, sizeof *f->len);
    f->logits = calloc((size_t)f->max_batch * STUB_NV, sizeof *f->logits);
    return f;
}
void fwd_free(fwd_t *f)
{
    if (!f)
        return;
    free(f->len);
    free(f->logits);
    free(f);
}
lf_code_t fwd_decode(fwd_t *f, const fwd_tok_t *t, int32_t n, lf_err_t *err)
{
    if (n < 1 || n > f->max_batch)
        return lf_err_set(err, LF_ERR_INVALID, "bad batch size %d", n);
    int32_t want[64] = {0};
    for (int32_t i = 0; i < n; i++) {
        if (t[i].seq < 0 || t[i].seq >= f->n_seq || t[i].token < 0 || t[i].token >= STUB_NV)
            return lf_err_set(err, LF_ERR_INVALID, "bad token");
        if (t[i].pos != f->len[t[i].seq] + want[t[i].seq % 64])
            return lf_err_set(err, LF_ERR_INVALID, "bad position %d for seq %d", t[i].pos, t[i].seq);
        if (t[i].pos >= f->n_ctx)
            return lf_err_set(err, LF_ERR_CONTEXT, "context full");
        want[t[i].seq % 64]++;
    }
    const char *d = getenv("LLM_STUB_DELAY_MS");
    if (d && atoi(d) > 0) {
        struct timespec ts = {atoi(d) / 1000, (long)(atoi(d) % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    f->n_logits = 0;
    for (int32_t i = 0; i < n; i++) {
        f->len[t[i].seq]++;
        if (!t[i].logits)
            continue;
        float *l = f->logits + (size_t)f->n_logits++ * STUB_NV;
        memset(l, 0, STUB_NV * sizeof *l);
        int next = t[i].token == 3 + '!' ? 2 : 3 + (unsigned char)STORY[t[i].pos % (sizeof STORY - 1)];
        l[next] = 10.0f;
    }
    return LF_OK;
}
int32_t fwd_max_batch(const fwd_t *f) { return f->max_batch; }
lf_code_t fwd_prefill(fwd_t *f, int32_t seq, const int32_t *tokens, int32_t n, bool want_logits, lf_err_t *err)
{
    for (int32_t i = 0; i < n; i++) {
        fwd_tok_t t = {.token = tokens[i], .seq = seq, .pos = fwd_seq_len(f, seq), .logits = want_logits && i == n - 1};
        lf_code_t rc = fwd_decode(f, &t, 1, err);
        if (rc != LF_OK)
            return rc;
    }
    return LF_OK;
}
const float *fwd_logits(const fwd_t *f, int32_t j)
{
    return j >= 0 && j < f->n_logits ? f->logits + (size_t)j * STUB_NV : NULL;
}
int32_t fwd_seq_len(const fwd_t *f, int32_t seq);
void fwd_seq_rm(fwd_t *f, int32_t seq)
{
    if (seq >= 0 && seq < f->n_seq)
        f->len[seq] = 0;
}
int32_t fwd_seq_len(const fwd_t *f, int32_t seq) { return seq >= 0 && seq < f->n_seq ? f->len[seq] : 0; }
int32_t fwd_n_ctx(const fwd_t *f) { return f->n_ctx; }
uint64_t fwd_kv_bytes(const fwd_t *f) { return (uint64_t)f->n_seq * (uint64_t)f->n_ctx * 64; }
