/* scratch.h - per-thread scratch buffers for the automata constructions.
 *
 * Building one small automaton needs a dozen temporary arrays of a few tens
 * of KB. Taken from malloc and freed each time, glibc handed them back to
 * the system and faulted them in again on the next construction: most of
 * the compile time of a typical schema went to page faults. A buffer from
 * gr_scratch() stays with the calling thread instead.
 *
 * Contract: slots are numbers the callers agree on (one per live array; a
 * function and the functions it calls use different slots). A slot's
 * buffer holds at least the bytes last asked for and its content is
 * undefined on return (gr_scratch_zero clears it). It stays valid until
 * the next call on that slot in the same thread. gr_scratch_trim() frees
 * the buffers larger than GR_SCRATCH_KEEP, so one huge automaton does not
 * pin its memory; call it when no slot is in use. Everything is freed when
 * the thread exits. NULL: out of memory.
 *
 * Blocks: the expression arenas (expr.h) take their GR_SCRATCH_BLOCK-byte
 * blocks from a per-thread pool and give them back when freed, so the
 * next compile reuses pages already mapped instead of faulting in fresh
 * ones (the heap between two compiles is taken by the mask caches). The
 * pool keeps at most GR_SCRATCH_POOL blocks; the rest go back to malloc.
 */
#ifndef LF_GR_SCRATCH_H
#define LF_GR_SCRATCH_H

#include <stddef.h>

#define GR_SCRATCH_SLOTS 32
#define GR_SCRATCH_KEEP ((size_t)1 << 20)

void *gr_scratch(int slot, size_t bytes);
void *gr_scratch_zero(int slot, size_t bytes);
void gr_scratch_trim(void);

#define GR_SCRATCH_BLOCK ((size_t)64 * 1024)
#define GR_SCRATCH_POOL 64
/* A block of GR_SCRATCH_BLOCK bytes (content undefined), NULL: out of memory. */
void *gr_scratch_block_get(void);
/* Gives a block from gr_scratch_block_get back (NULL: nothing). */
void gr_scratch_block_put(void *block);

#endif
