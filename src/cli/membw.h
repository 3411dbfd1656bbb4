/* membw.h - the machine's memory read bandwidth, measured in a moment.
 *
 * `bench` prints the decode step's bytes per second against this figure,
 * so "percent of the ceiling" is visible. The probe reads a buffer far
 * larger than the caches (256 MiB) with n_threads threads, each summing
 * its own contiguous slice with 64-byte loads, and keeps the best of a few
 * passes (the first pass faults the pages in and is not timed).
 */
#ifndef LF_MEMBW_H
#define LF_MEMBW_H

/* Read bandwidth in bytes per second with n_threads threads (>= 1);
 * 0 if the buffer cannot be allocated. Takes about half a second. */
double membw_read(int n_threads);

#endif
