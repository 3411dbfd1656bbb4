/* tap.h - a tiny TAP producer for the unit and golden tests.
 *
 * Each check prints "ok N - name" or "not ok N - name"; tap_done() prints
 * the plan and returns the exit status (0 if everything passed). Automake's
 * tap-driver.sh counts each line, so the suite summary counts cases, not
 * programs. Header-only: each test program includes it once.
 */
#ifndef LF_TAP_H
#define LF_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int tap_count_, tap_failed_;

/* Records one case; returns cond so callers can skip dependent checks. */
static inline int tap_ok(int cond, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), unused));
static inline int tap_ok(int cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%sok %d - ", cond ? "" : "not ", ++tap_count_);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    if (!cond)
        tap_failed_++;
    return cond;
}

/* Records one skipped case (TAP "# SKIP"): what the harness counts as
 * skipped, never as passed or failed; fmt says why. */
static inline void tap_skip(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), unused));
static inline void tap_skip(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("ok %d # SKIP ", ++tap_count_);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
}

/* A diagnostic line (ignored by the harness, shown in the log). */
static inline void tap_diag(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), unused));
static inline void tap_diag(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("# ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

/* Prints the plan; returns the process exit status. */
static inline int tap_done(void) __attribute__((unused));
static inline int tap_done(void)
{
    printf("1..%d\n", tap_count_);
    return tap_failed_ ? 1 : 0;
}

/* Directory of the shared fixtures, from the environment or the default. */
static inline const char *tap_env_dir(const char *var, const char *fallback)
    __attribute__((unused));
static inline const char *tap_env_dir(const char *var, const char *fallback)
{
    const char *v = getenv(var);
    return v && *v ? v : fallback;
}

/* The whole file at path as a malloc'd, NUL-terminated buffer (caller
 * frees); its length in *len if len is not NULL. NULL if unreadable. */
static inline char *tap_read_file(const char *path, size_t *len) __attribute__((unused));
static inline char *tap_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf) {
        buf[n] = 0;
        if (len)
            *len = (size_t)n;
    }
    fclose(f);
    return buf;
}

#endif
