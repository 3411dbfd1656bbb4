/* test_pull.c - the pure parts of `llm-fcgi pull`: SHA-256 against the
 * FIPS 180-4 / NIST vectors (incremental, any chunking), model references,
 * the choice of a GGUF in a repository listing (the hub's tree JSON),
 * ETags, the local layout and lookup, progress lines. The transfers
 * themselves are tested against a local hub in tests/e2e/pull.sh. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pull/download.h"
#include "pull/hub.h"
#include "pull/sha256.h"
#include "tap.h"

static void hex_of(const void *data, size_t len, size_t chunk, char out[65])
{
    sha256_t s;
    uint8_t d[32];
    sha256_init(&s);
    const uint8_t *p = data;
    for (size_t off = 0; off < len; off += chunk)
        sha256_update(&s, p + off, len - off < chunk ? len - off : chunk);
    sha256_final(&s, d);
    sha256_hex(d, out);
}

static void test_sha256(void)
{
    static const struct {
        const char *msg, *hex;
    } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
         "mnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    static const size_t chunks[] = {1, 3, 63, 64, 65, 1000};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
            char hex[65];
            hex_of(v[i].msg, strlen(v[i].msg), chunks[c], hex);
            tap_ok(!strcmp(hex, v[i].hex), "sha256 NIST vector %zu in chunks of %zu", i, chunks[c]);
        }
    /* one million 'a' (NIST), fed in uneven pieces */
    char *m = malloc(1000000);
    memset(m, 'a', 1000000);
    char hex[65];
    hex_of(m, 1000000, 4093, hex);
    tap_ok(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
           "sha256 of a million 'a'");
    free(m);
    /* lengths around the padding boundary: 55, 56, 63, 64 bytes */
    static const struct {
        size_t n;
        const char *hex;
    } pad[] = {
        {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
        {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
        {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
    };
    for (size_t i = 0; i < sizeof pad / sizeof pad[0]; i++) {
        char a[64];
        memset(a, 'a', sizeof a);
        hex_of(a, pad[i].n, 7, hex);
        tap_ok(!strcmp(hex, pad[i].hex), "sha256 of %zu 'a' (padding boundary)", pad[i].n);
    }
}

static void test_refs(void)
{
    static const struct {
        const char *in;
        int ok, url;
        const char *repo, *quant;
    } c[] = {
        {"HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q8_0", 1, 0, "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF", "Q8_0"},
        {"bartowski/Llama-3.2-1B-Instruct-GGUF", 1, 0, "bartowski/Llama-3.2-1B-Instruct-GGUF", ""},
        {"Qwen/Qwen2.5-0.5B-Instruct-GGUF:q4_k_m", 1, 0, "Qwen/Qwen2.5-0.5B-Instruct-GGUF", "q4_k_m"},
        {"https://example.org/m/x.gguf?download=1", 1, 1, "", ""},
        {"http://127.0.0.1:8080/a.gguf", 1, 1, "", ""},
        {"noslash", 0, 0, NULL, NULL},
        {"a/b/c", 0, 0, NULL, NULL},
        {"../etc:Q8_0", 0, 0, NULL, NULL},
        {"owner/..", 0, 0, NULL, NULL},
        {"owner/name:", 0, 0, NULL, NULL},
        {"owner/name:Q8 0", 0, 0, NULL, NULL},
        {"owner/na me", 0, 0, NULL, NULL},
        {":Q8_0/x", 0, 0, NULL, NULL},
        {"/abs/path", 0, 0, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        hub_ref_t r;
        lf_err_t err = {0};
        lf_code_t rc = hub_ref_parse(c[i].in, &r, &err);
        if (!c[i].ok) {
            tap_ok(rc == LF_ERR_INVALID && (strstr(err.msg, "OWNER/NAME") || strstr(err.msg, "quantization")),
                   "ref '%s' refused: %s", c[i].in, err.msg);
            continue;
        }
        tap_ok(rc == LF_OK && r.is_url == c[i].url && (c[i].url || (!strcmp(r.repo, c[i].repo) &&
                                                                    !strcmp(r.quant, c[i].quant))),
               "ref '%s' parses", c[i].in);
    }
    static const struct {
        const char *in;
        int yes;
    } l[] = {{"HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q8_0", 1}, {"owner/name", 1},
             {"https://h/x.gguf", 1}, {"models/x.gguf", 0}, {"x.gguf", 0}, {"/srv/models/a.gguf", 0},
             {"models/sub/x", 0}};
    for (size_t i = 0; i < sizeof l / sizeof l[0]; i++)
        tap_ok(hub_ref_looks_like(l[i].in) == l[i].yes, "'%s' %s a reference", l[i].in,
               l[i].yes ? "is" : "is not");
}

/* A realistic listing: the shape of GET /api/models/{repo}/tree/main. */
static const char *tree =
    "[{\"type\":\"file\",\"oid\":\"a1\",\"size\":1519,\"path\":\".gitattributes\"},"
    "{\"type\":\"file\",\"oid\":\"b2\",\"size\":2000,\"path\":\"README.md\"},"
    "{\"type\":\"directory\",\"oid\":\"c3\",\"size\":0,\"path\":\"BF16\"},"
    "{\"type\":\"file\",\"oid\":\"d4\",\"size\":700,\"path\":\"BF16/Model-BF16-00001-of-00002.gguf\","
    "\"lfs\":{\"oid\":\"1111111111111111111111111111111111111111111111111111111111111111\",\"size\":700,"
    "\"pointerSize\":135}},"
    "{\"type\":\"file\",\"oid\":\"e5\",\"size\":100,\"path\":\"Model-Q4_K_M.gguf\","
    "\"lfs\":{\"oid\":\"ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789\",\"size\":104857600,"
    "\"pointerSize\":134}},"
    "{\"type\":\"file\",\"oid\":\"f6\",\"size\":200,\"path\":\"Model-Q4_K_S.gguf\","
    "\"lfs\":{\"oid\":\"2222222222222222222222222222222222222222222222222222222222222222\",\"size\":200}},"
    "{\"type\":\"file\",\"oid\":\"g7\",\"size\":300,\"path\":\"Model-Q8_0.gguf\"},"
    "{\"type\":\"file\",\"oid\":\"h8\",\"size\":50,\"path\":\"mmproj-Model-Q8_0.gguf\"},"
    "{\"type\":\"file\",\"oid\":\"i9\",\"size\":60,\"path\":\"Model-IQ4_XS.gguf\"}]";

static void test_pick(void)
{
    static const struct {
        const char *quant;
        lf_code_t rc;
        const char *path, *msg;
    } c[] = {
        {"Q4_K_M", LF_OK, "Model-Q4_K_M.gguf", NULL},
        {"q4_k_m", LF_OK, "Model-Q4_K_M.gguf", NULL},
        {"", LF_OK, "Model-Q4_K_M.gguf", NULL}, /* default: Q4_K_M */
        {"Q8_0", LF_OK, "Model-Q8_0.gguf", NULL}, /* not the mmproj */
        {"IQ4_XS", LF_OK, "Model-IQ4_XS.gguf", NULL},
        {"Q4_K", LF_ERR_NOT_FOUND, NULL, "Model-Q4_K_M.gguf"}, /* whole words only; lists what there is */
        {"Q5_K_M", LF_ERR_NOT_FOUND, NULL, "Model-Q8_0.gguf"},
        {"BF16", LF_ERR_UNSUPPORTED, NULL, "split"},
        {"Model", LF_ERR_INVALID, NULL, "match"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        hub_file_t f;
        lf_err_t err = {0};
        lf_code_t rc = hub_pick_gguf(tree, "o/m", c[i].quant, &f, &err);
        int ok = rc == c[i].rc && (c[i].path ? !strcmp(f.path, c[i].path) : strstr(err.msg, c[i].msg) != NULL);
        tap_ok(ok, "pick '%s' -> %s (%s)", c[i].quant, c[i].path ? c[i].path : lf_code_name(c[i].rc),
               rc == LF_OK ? f.path : err.msg);
    }
    hub_file_t f;
    hub_pick_gguf(tree, "o/m", "Q4_K_M", &f, NULL);
    tap_ok(f.size == 104857600 && !strcmp(f.sha256, "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"),
           "LFS size and SHA-256 (lower-cased) come from the listing");
    hub_pick_gguf(tree, "o/m", "Q8_0", &f, NULL);
    tap_ok(f.size == 300 && f.sha256[0] == '\0', "a file without LFS: its size, no digest");
    lf_err_t err = {0};
    tap_ok(hub_pick_gguf("{\"error\":\"Repository not found\"}", "o/m", "", &f, &err) == LF_ERR_FORMAT,
           "a listing that is not an array is a format error");
    tap_ok(hub_pick_gguf("[{\"type\":\"file\",\"path\":\"README.md\"}]", "o/m", "", &f, &err) == LF_ERR_NOT_FOUND &&
               strstr(err.msg, "no GGUF"),
           "a repository without GGUF files: %s", err.msg);
    tap_ok(hub_pick_gguf("[{\"type\":\"file\",\"path\":\"only-f16.gguf\"}]", "o/m", "", &f, &err) == LF_OK &&
               !strcmp(f.path, "only-f16.gguf"),
           "the only GGUF is the default whatever its quantization");
    tap_ok(hub_pick_gguf("[{\"path\":\"a-F16.gguf\"},{\"path\":\"a-Q6_K.gguf\"}]", "o/m", "", &f, &err) ==
                   LF_ERR_NOT_FOUND &&
               strstr(err.msg, "a-Q6_K.gguf"),
           "several GGUFs and no default: the error lists them");
}

static void test_etag(void)
{
    static const struct {
        const char *in;
        int ok;
    } c[] = {{"\"ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789\"", 1},
             {"abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789", 1},
             {"W/\"abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789\"", 1},
             {"\"6567a2b1-9c4\"", 0}, /* nginx's own mtime-size ETag */
             {"\"a1b2c3\"", 0},
             {"zzcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789", 0}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char out[65];
        int ok = hub_etag_sha256(c[i].in, out);
        tap_ok(ok == c[i].ok && (!ok || !strcmp(out, "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789")),
               "etag %s %s a SHA-256", c[i].in, c[i].ok ? "is" : "is not");
    }
}

/* the projector beside a model: llama.cpp's -hf rules, F16 first */
static void test_mmproj(void)
{
    static const struct {
        const char *names[6];
        const char *model;
        const char *want; /* NULL: none */
    } c[] = {
        {{"m-Q4_K_M.gguf", "mmproj-m-Q8_0.gguf", "mmproj-m-f16.gguf", "mmproj-m-F32.gguf"}, "m-Q4_K_M.gguf",
         "mmproj-m-f16.gguf"},
        {{"m-Q4_K_M.gguf", "mmproj-m-Q8_0.gguf", "mmproj-m-F32.gguf", "mmproj-m-BF16.gguf"}, "m-Q4_K_M.gguf",
         "mmproj-m-BF16.gguf"},
        {{"m-Q4_K_M.gguf", "mmproj-m-Q8_0.gguf", "mmproj-m-F32.gguf"}, "m-Q4_K_M.gguf", "mmproj-m-F32.gguf"},
        {{"m-Q4_K_M.gguf", "MMPROJ-model.gguf"}, "m-Q4_K_M.gguf", "MMPROJ-model.gguf"}, /* any case, no type */
        {{"m-Q4_K_M.gguf", "mmproj-b-Q8_0.gguf", "mmproj-a-Q8_0.gguf"}, "m-Q4_K_M.gguf", "mmproj-a-Q8_0.gguf"},
        {{"m-Q4_K_M.gguf", "m-F16.gguf", "README.md"}, "m-Q4_K_M.gguf", NULL},          /* text only */
        {{"m-Q4_K_M.gguf", "mmproj-m-f16.gguf.part", "mmproj.txt"}, "m-Q4_K_M.gguf", NULL}, /* not GGUFs */
        {{"m-Q4_K_M.gguf", "mmproj-m-F16-00001-of-00002.gguf"}, "m-Q4_K_M.gguf", NULL},    /* split */
        /* directories: the model's own, or one above it, the deepest first */
        {{"q4/m-Q4_K_M.gguf", "mmproj-F16.gguf", "q4/mmproj-Q8_0.gguf"}, "q4/m-Q4_K_M.gguf", "q4/mmproj-Q8_0.gguf"},
        {{"q4/m-Q4_K_M.gguf", "mmproj-F16.gguf", "q8/mmproj-F16.gguf"}, "q4/m-Q4_K_M.gguf", "mmproj-F16.gguf"},
        {{"q4/m-Q4_K_M.gguf", "q/mmproj-F16.gguf"}, "q4/m-Q4_K_M.gguf", NULL},           /* "q/" is not "q4/" */
        {{"m-Q4_K_M.gguf", "sub/mmproj-F16.gguf"}, "m-Q4_K_M.gguf", NULL},               /* below the model */
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        size_t n = 0;
        while (n < 6 && c[i].names[n])
            n++;
        const int idx = hub_match_mmproj(c[i].names, n, c[i].model);
        tap_ok(c[i].want ? idx >= 0 && !strcmp(c[i].names[idx], c[i].want) : idx < 0, "mmproj for %s among %zu: %s",
               c[i].model, n, c[i].want ? c[i].want : "none");
    }
    static const char tree[] =
        "[{\"type\":\"file\",\"path\":\"m-Q8_0.gguf\",\"size\":10},"
        "{\"type\":\"file\",\"path\":\"mmproj-m-Q8_0.gguf\",\"size\":11},"
        "{\"type\":\"file\",\"path\":\"mmproj-m-F16.gguf\",\"size\":5,\"lfs\":{\"oid\":"
        "\"ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789\",\"size\":12}}]";
    hub_file_t f;
    lf_err_t err = {0};
    tap_ok(hub_pick_mmproj(tree, "o/m", "m-Q8_0.gguf", &f, &err) == LF_OK && !strcmp(f.path, "mmproj-m-F16.gguf") &&
               f.size == 12 && !strcmp(f.sha256, "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"),
           "hub_pick_mmproj: the F16 projector with its LFS size and digest");
    tap_ok(hub_pick_mmproj("[{\"type\":\"file\",\"path\":\"m-Q8_0.gguf\"}]", "o/m", "m-Q8_0.gguf", &f, &err) ==
                   LF_ERR_NOT_FOUND &&
               strstr(err.msg, "no projector"),
           "hub_pick_mmproj: a text-only repository: %s", err.msg);
    tap_ok(hub_pick_gguf(tree, "o/m", "Q8_0", &f, &err) == LF_OK && !strcmp(f.path, "m-Q8_0.gguf"),
           "the model pick still skips the projectors");
}

static void test_local(void)
{
    char tmp[] = "/tmp/test_pull.XXXXXX";
    if (!tap_ok(mkdtemp(tmp) != NULL, "temp dir"))
        return;
    hub_ref_t r;
    char dir[1024], file[256], path[2048];
    hub_ref_parse("o/m:Q8_0", &r, NULL);
    tap_ok(hub_local_dir(tmp, &r, dir, sizeof dir, file, sizeof file, NULL) == LF_OK && strstr(dir, "/o/m") &&
               !file[0],
           "hub files live in MODELS_DIR/OWNER/NAME");
    tap_ok(!hub_local_find(tmp, &r, path, sizeof path), "nothing pulled yet: not found");
    for (char *p = dir + strlen(tmp) + 1; (p = strchr(p, '/')) != NULL; p++) { /* MODELS_DIR/o, then /o/m */
        *p = '\0';
        mkdir(dir, 0755);
        *p = '/';
    }
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/Model-Q8_0.gguf.part", dir);
    FILE *f = fopen(path, "w");
    if (!tap_ok(f != NULL, "model directory made"))
        return;
    fclose(f);
    tap_ok(!hub_local_find(tmp, &r, path, sizeof path), "a partial download does not count");
    snprintf(path, sizeof path, "%s/Model-Q8_0.gguf", dir);
    f = fopen(path, "w");
    if (f)
        fclose(f);
    char found[2048];
    tap_ok(hub_local_find(tmp, &r, found, sizeof found) && !strcmp(found, path), "the pulled file is found offline");
    hub_ref_parse("o/m:Q4_K_M", &r, NULL);
    tap_ok(!hub_local_find(tmp, &r, found, sizeof found), "another quantization is not");
    hub_ref_parse("o/m:Q8_0", &r, NULL);
    tap_ok(!hub_local_find_mmproj(tmp, &r, found, sizeof found), "no projector pulled: none found");
    char mm[2][2048];
    snprintf(mm[0], sizeof mm[0], "%s/mmproj-m-Q8_0.gguf", dir);
    snprintf(mm[1], sizeof mm[1], "%s/mmproj-m-F16.gguf", dir);
    for (int i = 0; i < 2; i++)
        if ((f = fopen(mm[i], "w")))
            fclose(f);
    tap_ok(hub_local_find_mmproj(tmp, &r, found, sizeof found) && !strcmp(found, mm[1]),
           "the pulled projector is found offline (F16 before Q8_0)");
    tap_ok(hub_local_find(tmp, &r, found, sizeof found) && !strcmp(found, path), "the model is still the model");
    for (int i = 0; i < 2; i++)
        unlink(mm[i]);
    hub_ref_parse("https://h.example/p/x-Q8_0.gguf?download=true", &r, NULL);
    tap_ok(hub_local_dir(tmp, &r, dir, sizeof dir, file, sizeof file, NULL) == LF_OK && !strcmp(file, "x-Q8_0.gguf") &&
               !strcmp(dir, tmp),
           "URL files live in MODELS_DIR under the URL's name, query removed");
    lf_err_t err = {0};
    hub_ref_parse("https://h.example/", &r, NULL);
    tap_ok(hub_local_dir(tmp, &r, dir, sizeof dir, file, sizeof file, &err) == LF_ERR_INVALID,
           "a URL without a file name is refused: %s", err.msg);
    hub_ref_parse("https://h.example/a/..", &r, NULL);
    tap_ok(hub_local_dir(tmp, &r, dir, sizeof dir, file, sizeof file, NULL) == LF_ERR_INVALID,
           "a URL ending in .. is refused");
    unlink(path);
    snprintf(path, sizeof path, "%s/o/m/Model-Q8_0.gguf.part", tmp);
    unlink(path);
    snprintf(path, sizeof path, "%s/o/m", tmp);
    rmdir(path);
    snprintf(path, sizeof path, "%s/o", tmp);
    rmdir(path);
    rmdir(tmp);
}

static void test_env(void)
{
    char out[512];
    setenv("LLM_MODELS_DIR", "/srv/m", 1);
    tap_ok(hub_models_dir(out, sizeof out) && !strcmp(out, "/srv/m"), "LLM_MODELS_DIR wins");
    unsetenv("LLM_MODELS_DIR");
    setenv("XDG_CACHE_HOME", "/c", 1);
    tap_ok(hub_models_dir(out, sizeof out) && !strcmp(out, "/c/llm-fcgi"), "then $XDG_CACHE_HOME/llm-fcgi");
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/home/u", 1);
    tap_ok(hub_models_dir(out, sizeof out) && !strcmp(out, "/home/u/.cache/llm-fcgi"), "then ~/.cache/llm-fcgi");
    setenv("HF_ENDPOINT", "http://127.0.0.1:9/hub//", 1);
    hub_endpoint(out, sizeof out);
    tap_ok(!strcmp(out, "http://127.0.0.1:9/hub"), "HF_ENDPOINT, trailing slashes removed");
    unsetenv("HF_ENDPOINT");
    hub_endpoint(out, sizeof out);
    tap_ok(!strcmp(out, "https://huggingface.co"), "default endpoint");
}

static void test_progress(void)
{
    char line[256];
    dl_progress_format(line, sizeof line, DL_PROGRESS_LINES, 72500000, 145000000, 12300000, 0);
    tap_ok(!strcmp(line, " 50%  72.5 MB / 145.0 MB  12.3 MB/s"), "progress line: '%s'", line);
    dl_progress_format(line, sizeof line, DL_PROGRESS_BAR, 36250000, 145000000, 1000000, 20);
    tap_ok(!strcmp(line, " 25% [#####---------------] 36.2 MB / 145.0 MB  1.0 MB/s  ETA 1:48"),
           "progress bar: '%s'", line);
    dl_progress_format(line, sizeof line, DL_PROGRESS_BAR, 5000, 0, 0, 20);
    tap_ok(!strcmp(line, "5.0 kB"), "unknown total: bytes only ('%s')", line);
    dl_progress_format(line, sizeof line, DL_PROGRESS_BAR, 200, 100, 0, 10);
    tap_ok(!strncmp(line, "100% [##########]", 17), "never above 100%% ('%s')", line);
}

int main(void)
{
    test_sha256();
    test_refs();
    test_pick();
    test_mmproj();
    test_etag();
    test_local();
    test_env();
    test_progress();
    return tap_done();
}
