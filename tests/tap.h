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

#endif
