/* download.h - one file over HTTP(S) with libcurl into its final place:
 * resumable, checksummed, validated as GGUF, moved into place atomically.
 *
 * The bytes go to DEST.part next to DEST. An existing .part is resumed
 * (HTTP Range); a server that ignores the range, or a .part larger than the
 * file, restarts the transfer from zero. When the expected SHA-256 is known
 * (the hub's LFS digest, or the X-Linked-Etag / ETag header of the reply
 * when it is a SHA-256) the whole file is checked against it; a mismatch
 * deletes the .part. The finished file must then open as a valid GGUF
 * (gguf.h: every header, metadata and tensor extent checked); if it does
 * not, the .part is deleted. Only then is it renamed to DEST, so DEST is
 * either absent or a complete, checked file. An interrupted transfer (a
 * network error, Ctrl-C) keeps the .part for the next attempt.
 *
 * Errors (lf_err_t message meant for the user, naming the file or URL):
 * LF_ERR_IO for network, HTTP (the status and URL) and file-system
 * failures (a directory that cannot be created or written, a full disk:
 * the message says which and what to do), LF_ERR_FORMAT for a checksum
 * mismatch or a file that is not GGUF.
 */
#ifndef LF_DOWNLOAD_H
#define LF_DOWNLOAD_H

#include <stdint.h>
#include <stdio.h>

#include "common/status.h"

typedef enum {
    DL_PROGRESS_NONE,   /* quiet */
    DL_PROGRESS_LINES,  /* a line every 10 % (logs, pipes) */
    DL_PROGRESS_BAR     /* a bar redrawn in place (a terminal) */
} dl_progress_t;

typedef struct {
    const char *url;
    const char *dest;          /* final path; its directory is created */
    const char *sha256;        /* expected digest (64 hex) or NULL/"" */
    uint64_t size;             /* expected size, 0 = unknown */
    const char *token;         /* bearer token (HF_TOKEN) or NULL */
    dl_progress_t progress;
    FILE *log;                 /* progress and notes (stderr) */
} dl_job_t;

/* Downloads job->url to job->dest as described above. */
lf_code_t dl_fetch(const dl_job_t *job, lf_err_t *err);

/* Fetches a small document (an API listing) into a malloc'd, NUL-terminated
 * buffer (*out, caller frees), at most max bytes. *http_status (may be
 * NULL) gets the HTTP status of the last reply, 0 when none came (no
 * connection). Errors: LF_ERR_NOT_FOUND for HTTP 404 and 401 (the hub's
 * answer to an unknown repository), LF_ERR_AUTH for 403 (gated), LF_ERR_IO
 * otherwise. */
lf_code_t dl_get_text(const char *url, const char *token, size_t max, char **out, long *http_status,
                      lf_err_t *err);

/* One progress line or bar (no newline): done and total bytes (total 0 =
 * unknown), speed in bytes/s (<= 0: unknown), width of the bar in cells.
 * Pure; exposed for tests. */
void dl_progress_format(char *out, size_t cap, dl_progress_t mode, uint64_t done, uint64_t total, double speed,
                        int bar_cells);

#endif
