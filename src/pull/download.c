/* download.c - resumable, checked downloads with libcurl (see download.h). */
#include "pull/download.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/gguf/gguf.h"
#include "pull/hub.h"
#include "pull/sha256.h"

typedef struct {
    const dl_job_t *job;
    int fd;
    int write_errno;       /* set when a write to the .part failed */
    sha256_t sha;
    uint64_t offset;       /* bytes already in the .part when the transfer began */
    uint64_t written;      /* bytes written by this transfer */
    int first_status_done; /* the first response's headers are complete */
    char linked_etag[65];  /* X-Linked-Etag (a SHA-256) */
    char first_etag[65];   /* ETag of the first response, when a SHA-256 */
    uint64_t linked_size;  /* X-Linked-Size */
    int last_decile;
    double last_draw, t0;
} xfer_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void human(char *out, size_t cap, double b)
{
    const char *u[] = {"B", "kB", "MB", "GB", "TB"};
    int i = 0;
    while (b >= 1000 && i < 4)
        b /= 1000, i++;
    snprintf(out, cap, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

void dl_progress_format(char *out, size_t cap, dl_progress_t mode, uint64_t done, uint64_t total, double speed,
                        int bar_cells)
{
    char d[32], t[32], s[32] = "";
    human(d, sizeof d, (double)done);
    human(t, sizeof t, (double)total);
    if (speed > 0) {
        human(s, sizeof s - 3, speed);
        strcat(s, "/s");
    }
    if (!total) {
        snprintf(out, cap, "%s%s%s", d, *s ? "  " : "", s);
        return;
    }
    int pct = (int)(done >= total ? 100 : done * 100 / total);
    if (mode != DL_PROGRESS_BAR) {
        snprintf(out, cap, "%3d%%  %s / %s%s%s", pct, d, t, *s ? "  " : "", s);
        return;
    }
    char bar[128];
    if (bar_cells > (int)sizeof bar - 1)
        bar_cells = (int)sizeof bar - 1;
    int fill = (int)((double)bar_cells * (double)(done > total ? total : done) / (double)total);
    for (int i = 0; i < bar_cells; i++)
        bar[i] = i < fill ? '#' : '-';
    bar[bar_cells] = '\0';
    char eta[32] = "";
    if (speed > 0 && done < total) {
        long sec = (long)((double)(total - done) / speed);
        snprintf(eta, sizeof eta, "  ETA %ld:%02ld", sec / 60, sec % 60);
    }
    snprintf(out, cap, "%3d%% [%s] %s / %s%s%s%s", pct, bar, d, t, *s ? "  " : "", s, eta);
}

static void draw(xfer_t *x, uint64_t total, int final)
{
    const dl_job_t *j = x->job;
    if (j->progress == DL_PROGRESS_NONE || !j->log)
        return;
    uint64_t done = x->offset + x->written;
    double t = now_s(), el = t - x->t0;
    double speed = el > 0.2 ? (double)x->written / el : 0;
    char line[256];
    if (j->progress == DL_PROGRESS_BAR) {
        if (!final && t - x->last_draw < 0.1)
            return;
        x->last_draw = t;
        dl_progress_format(line, sizeof line, DL_PROGRESS_BAR, done, total, speed, 30);
        fprintf(j->log, "\r%s\033[K%s", line, final ? "\n" : "");
    } else {
        int dec = total ? (int)(done * 10 / total) : -1;
        if (!final && (dec <= x->last_decile || dec < 0))
            return;
        x->last_decile = dec;
        dl_progress_format(line, sizeof line, DL_PROGRESS_LINES, done, total, speed, 0);
        fprintf(j->log, "pull: %s\n", line);
    }
    fflush(j->log);
}

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
    xfer_t *x = ud;
    size_t len = sz * n, off = 0;
    while (off < len) {
        ssize_t w = write(x->fd, p + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            x->write_errno = w < 0 ? errno : EIO;
            return 0; /* libcurl stops with CURLE_WRITE_ERROR */
        }
        off += (size_t)w;
    }
    sha256_update(&x->sha, p, len);
    x->written += len;
    return len;
}

/* header value of "Name: value\r\n" in line (len bytes), trimmed, into out */
static bool header_value(const char *line, size_t len, const char *name, char *out, size_t cap)
{
    size_t n = strlen(name);
    if (len <= n + 1 || strncasecmp(line, name, n) || line[n] != ':')
        return false;
    const char *v = line + n + 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    snprintf(out, cap, "%.*s", (int)(end - v), v);
    return true;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    xfer_t *x = ud;
    size_t len = sz * n;
    char v[256];
    if (len <= 2) { /* the blank line ending a response's headers */
        x->first_status_done = 1;
        return len;
    }
    if (header_value(p, len, "X-Linked-Etag", v, sizeof v))
        hub_etag_sha256(v, x->linked_etag);
    else if (!x->first_status_done && header_value(p, len, "ETag", v, sizeof v))
        hub_etag_sha256(v, x->first_etag);
    else if (header_value(p, len, "X-Linked-Size", v, sizeof v))
        x->linked_size = strtoull(v, NULL, 10);
    return len;
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ut, curl_off_t un)
{
    (void)dlnow, (void)ut, (void)un;
    xfer_t *x = ud;
    uint64_t total = x->job->size ? x->job->size : dltotal > 0 ? x->offset + (uint64_t)dltotal : x->linked_size;
    draw(x, total, 0);
    return 0;
}

static void set_common(CURL *c, const char *url, const char *token, struct curl_slist **hdrs)
{
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
    /* a transfer slower than 1 byte/s for a minute is dead: keep the .part */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "llm-fcgi/" PACKAGE_VERSION);
    /* no gzip: the sizes and digests are those of the file itself */
    *hdrs = curl_slist_append(NULL, "Accept-Encoding: identity");
    if (token && *token) {
        char auth[1024];
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        *hdrs = curl_slist_append(*hdrs, auth); /* libcurl drops it on a redirect to another host */
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hdrs);
}

static lf_code_t http_error(CURL *c, CURLcode rc, const char *url, const char *curl_msg, lf_err_t *err)
{
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_HTTP_RETURNED_ERROR)
        return lf_err_set(err, LF_ERR_IO, "%s: %s", url, *curl_msg ? curl_msg : curl_easy_strerror(rc));
    if (status == 404 || status == 401)
        return lf_err_set(err, LF_ERR_NOT_FOUND, "%s: HTTP %ld (not found, or private: set HF_TOKEN)", url, status);
    if (status == 403)
        return lf_err_set(err, LF_ERR_AUTH, "%s: HTTP 403 (a gated repository: accept its terms on the hub and "
                                            "set HF_TOKEN)", url);
    return lf_err_set(err, LF_ERR_IO, "%s: HTTP %ld", url, status);
}

typedef struct {
    char *buf;
    size_t len, max;
} text_t;

static size_t on_text(char *p, size_t sz, size_t n, void *ud)
{
    text_t *t = ud;
    size_t len = sz * n;
    if (t->len + len > t->max)
        return 0;
    char *nb = realloc(t->buf, t->len + len + 1);
    if (!nb)
        return 0;
    t->buf = nb;
    memcpy(t->buf + t->len, p, len);
    t->len += len;
    t->buf[t->len] = '\0';
    return len;
}

/* libcurl's one-time set-up, before the first handle (not thread-safe:
 * downloads happen before serve starts its threads) */
static void curl_ready(void)
{
    static int done;
    if (!done++)
        curl_global_init(CURL_GLOBAL_DEFAULT);
}

lf_code_t dl_get_text(const char *url, const char *token, size_t max, char **out, long *http_status,
                      lf_err_t *err)
{
    *out = NULL;
    if (http_status)
        *http_status = 0;
    curl_ready();
    CURL *c = curl_easy_init();
    if (!c)
        return lf_err_set(err, LF_ERR_NOMEM, "cannot start libcurl");
    struct curl_slist *hdrs = NULL;
    text_t t = {.max = max};
    char msg[CURL_ERROR_SIZE] = "";
    set_common(c, url, token, &hdrs);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, msg);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_text);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
    CURLcode rc = curl_easy_perform(c);
    if (http_status)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, http_status);
    lf_code_t r = LF_OK;
    if (rc == CURLE_WRITE_ERROR)
        r = lf_err_set(err, LF_ERR_IO, "%s: reply larger than %zu bytes", url, max);
    else if (rc != CURLE_OK)
        r = http_error(c, rc, url, msg, err);
    else if (!t.buf)
        t.buf = strdup("");
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    if (r != LF_OK) {
        free(t.buf);
        return r;
    }
    *out = t.buf;
    return *out ? LF_OK : lf_err_set(err, LF_ERR_NOMEM, "out of memory");
}

/* mkdir -p */
static lf_code_t make_dirs(const char *path, lf_err_t *err)
{
    char p[4096];
    if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p)
        return lf_err_set(err, LF_ERR_INVALID, "path too long: %s", path);
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char was = *s;
        *s = '\0';
        if (mkdir(p, 0755) < 0 && errno != EEXIST)
            return lf_err_set(err, LF_ERR_IO,
                              "cannot create the model directory %s: %s (set LLM_MODELS_DIR to a directory you "
                              "can write, or pass --models-dir)", p, strerror(errno));
        *s = was;
        if (!was)
            break;
    }
    return LF_OK;
}

static lf_code_t write_error(const char *part, int e, uint64_t have, lf_err_t *err)
{
    if (e == ENOSPC || e == EDQUOT || e == EFBIG)
        return lf_err_set(err, LF_ERR_IO,
                          "cannot write %s: %s. Free some space (or choose another LLM_MODELS_DIR) and run the "
                          "same command again: the download resumes from the %llu bytes already there",
                          part, strerror(e), (unsigned long long)have);
    return lf_err_set(err, LF_ERR_IO, "cannot write %s: %s", part, strerror(e));
}

/* Hashes the bytes already in the .part (a resumed download is checked
 * whole). */
static lf_code_t hash_existing(int fd, uint64_t n, sha256_t *sha, const char *part, lf_err_t *err)
{
    static char buf[1 << 16];
    uint64_t left = n;
    if (lseek(fd, 0, SEEK_SET) < 0)
        return lf_err_set(err, LF_ERR_IO, "cannot read %s: %s", part, strerror(errno));
    while (left) {
        ssize_t r = read(fd, buf, left < sizeof buf ? (size_t)left : sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return lf_err_set(err, LF_ERR_IO, "cannot read %s: %s", part, r ? strerror(errno) : "short file");
        sha256_update(sha, buf, (size_t)r);
        left -= (uint64_t)r;
    }
    return LF_OK;
}

/* One transfer attempt from the .part's current size. *restart is set when
 * the server cannot continue it (the caller truncates and tries again). */
static lf_code_t transfer(xfer_t *x, const char *part, int *restart, lf_err_t *err)
{
    const dl_job_t *j = x->job;
    *restart = 0;
    CURL *c = curl_easy_init();
    if (!c)
        return lf_err_set(err, LF_ERR_NOMEM, "cannot start libcurl");
    struct curl_slist *hdrs = NULL;
    char msg[CURL_ERROR_SIZE] = "";
    set_common(c, j->url, j->token, &hdrs);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, msg);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
    if (x->offset)
        curl_easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)x->offset);
    x->t0 = now_s();
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    lf_code_t r = LF_OK;
    if (rc == CURLE_WRITE_ERROR && x->write_errno) {
        r = write_error(part, x->write_errno, x->offset + x->written, err);
    } else if (x->offset && (rc == CURLE_RANGE_ERROR || (rc == CURLE_HTTP_RETURNED_ERROR && status == 416))) {
        /* the server ignores ranges, or the .part is not a prefix of the
         * file any more (416 when it is as long or longer): start over,
         * unless it is already complete */
        uint64_t total = j->size ? j->size : x->linked_size;
        if (status == 416 && total && x->offset == total)
            r = LF_OK;
        else
            *restart = 1;
    } else if (rc != CURLE_OK) {
        r = http_error(c, rc, j->url, msg, err);
        if (x->offset + x->written && j->log && j->progress != DL_PROGRESS_NONE)
            fprintf(j->log, "\npull: transfer interrupted; %llu bytes kept in %s, run the same command to resume\n",
                    (unsigned long long)(x->offset + x->written), part);
    } else {
        uint64_t total = j->size ? j->size : x->linked_size;
        draw(x, total ? total : x->offset + x->written, 1);
    }
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    return r;
}

/* The finished .part: size, digest, GGUF. Deletes it when it is wrong. */
static lf_code_t check_part(const xfer_t *x, const char *part, const char *want_sha, lf_err_t *err)
{
    const dl_job_t *j = x->job;
    struct stat st;
    if (stat(part, &st) < 0)
        return lf_err_set(err, LF_ERR_IO, "cannot read %s: %s", part, strerror(errno));
    uint64_t want_size = j->size ? j->size : x->linked_size;
    if (want_size && (uint64_t)st.st_size != want_size) {
        unlink(part);
        return lf_err_set(err, LF_ERR_FORMAT, "%s: got %llu bytes, the hub says %llu; the download was removed",
                          j->url, (unsigned long long)st.st_size, (unsigned long long)want_size);
    }
    if (*want_sha) {
        sha256_t s = x->sha;
        uint8_t d[32];
        char hex[65];
        sha256_final(&s, d);
        sha256_hex(d, hex);
        if (strcmp(hex, want_sha)) {
            unlink(part);
            return lf_err_set(err, LF_ERR_FORMAT,
                              "%s: checksum mismatch (SHA-256 %s, expected %s); the download was removed",
                              j->url, hex, want_sha);
        }
    }
    lf_err_t gerr = {0};
    gguf_file_t *g = gguf_open_metadata(part, &gerr);
    if (!g) {
        unlink(part);
        return lf_err_set(err, LF_ERR_FORMAT, "%s is not a GGUF model file (%s); the download was removed",
                          j->url, gerr.msg);
    }
    gguf_close(g);
    g = gguf_open(part, &gerr);
    if (!g) {
        /* a truncated or corrupt file without a digest to vouch for it is
         * refused; a file that matches the hub's digest is kept (it is
         * what the publisher uploaded; maybe only this build cannot run it) */
        if (!*want_sha) {
            unlink(part);
            return lf_err_set(err, LF_ERR_FORMAT, "%s is not a valid GGUF file (%s); the download was removed",
                              j->url, gerr.msg);
        }
        if (j->log)
            fprintf(j->log, "pull: warning: this build cannot load the file: %s\n", gerr.msg);
    }
    gguf_close(g);
    return LF_OK;
}

lf_code_t dl_fetch(const dl_job_t *j, lf_err_t *err)
{
    char dir[4096], part[4200];
    snprintf(dir, sizeof dir, "%s", j->dest);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        lf_code_t rc = make_dirs(dir, err);
        if (rc != LF_OK)
            return rc;
    }
    snprintf(part, sizeof part, "%s.part", j->dest);
    int fd = open(part, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return lf_err_set(err, LF_ERR_IO, "cannot write %s: %s (set LLM_MODELS_DIR to a directory you can write, "
                                          "or pass --models-dir)", part, strerror(errno));
    curl_ready();
    xfer_t x = {.job = j, .fd = fd, .last_decile = -1};
    lf_code_t rc = LF_OK;
    for (int attempt = 0; attempt < 2; attempt++) {
        struct stat st;
        if (fstat(fd, &st) < 0) {
            rc = lf_err_set(err, LF_ERR_IO, "cannot read %s: %s", part, strerror(errno));
            break;
        }
        sha256_init(&x.sha);
        x.offset = (uint64_t)st.st_size;
        x.written = 0;
        x.write_errno = 0;
        x.first_status_done = 0;
        x.linked_etag[0] = x.first_etag[0] = '\0';
        if (x.offset && j->log && j->progress != DL_PROGRESS_NONE)
            fprintf(j->log, "pull: resuming %s after %llu bytes\n", part, (unsigned long long)x.offset);
        if ((rc = hash_existing(fd, x.offset, &x.sha, part, err)) != LF_OK)
            break;
        if (lseek(fd, 0, SEEK_END) < 0) {
            rc = lf_err_set(err, LF_ERR_IO, "cannot seek in %s: %s", part, strerror(errno));
            break;
        }
        int restart = 0;
        rc = transfer(&x, part, &restart, err);
        if (!restart)
            break;
        if (j->log && j->progress != DL_PROGRESS_NONE)
            fprintf(j->log, "pull: the server cannot resume %s; starting over\n", j->url);
        if (ftruncate(fd, 0) < 0) {
            rc = lf_err_set(err, LF_ERR_IO, "cannot truncate %s: %s", part, strerror(errno));
            break;
        }
        rc = lf_err_set(err, LF_ERR_IO, "%s: the server cannot resume the download", j->url);
    }
    if (rc == LF_OK && fsync(fd) < 0)
        rc = write_error(part, errno, x.offset + x.written, err);
    if (close(fd) < 0 && rc == LF_OK)
        rc = write_error(part, errno, x.offset + x.written, err);
    if (rc != LF_OK)
        return rc;
    const char *want = j->sha256 && *j->sha256 ? j->sha256 : *x.linked_etag ? x.linked_etag : x.first_etag;
    char want_lc[65] = "";
    if (*want && !hub_etag_sha256(want, want_lc))
        return lf_err_set(err, LF_ERR_INVALID, "expected SHA-256 '%s' is not 64 hex digits", want);
    if ((rc = check_part(&x, part, want_lc, err)) != LF_OK)
        return rc;
    if (rename(part, j->dest) < 0)
        return lf_err_set(err, LF_ERR_IO, "cannot move %s to %s: %s", part, j->dest, strerror(errno));
    if (j->log && j->progress != DL_PROGRESS_NONE)
        fprintf(j->log, "pull: %s%s\n", *want_lc ? "SHA-256 verified, " : "", "GGUF checked");
    return LF_OK;
}
