/* Memory-saver regions (docs/behavior.md §2), over a bs_dev.
 *
 * Every device allocation of a rank lives here, tagged ("default",
 * "param_buffer", "grad_buffer"), with or without a cpu backup. pause/resume
 * act on one tag or on all (tag == NULL) with the strict preconditions of
 * torch_memory_saver; a resume without backup leaves a poison pattern.
 * A read of paused memory on the host device faults and is reported
 * (region, offset, phase) instead of silently reading stale bytes. */
#ifndef BS_MEMSAVER_H
#define BS_MEMSAVER_H

#include <stdbool.h>
#include <stddef.h>

#include "dev/bs_dev.h"
#include "memsaver/bs_trap.h" /* BS_TAG_MAX, bs_region_state */

#define BS_TAG_DEFAULT "default"
#define BS_TAG_PARAM "param_buffer"
#define BS_TAG_GRAD "grad_buffer"

typedef struct bs_memsaver bs_memsaver; /* the memory saver of one rank */

bs_status bs_memsaver_create(bs_dev *dev, uint64_t poison_seed,
                             bs_memsaver **out);
void bs_memsaver_destroy(bs_memsaver *ms);

/* A new allocation of `bytes` in region `tag`: rounded up to the device
 * page, or, up to half a page, to 512 bytes in a one-page segment that
 * allocations of the same tag and cpu_backup share (PyTorch's caching
 * allocator's small blocks). A segment pauses, resumes and backs up whole,
 * and is released with its last allocation. */
bs_status bs_memsaver_alloc(bs_memsaver *ms, const char *tag, bool cpu_backup,
                            size_t bytes, void **ptr);
void bs_memsaver_free(bs_memsaver *ms, void *ptr);

/* [ptr, ptr + bytes) of one allocation is padding, bytes no element lives
 * in: a resume without backup zeroes it where it poisons the rest. Apart
 * from the allocation's padding so far; BS_ERR_INVALID otherwise. */
bs_status bs_memsaver_set_padding(bs_memsaver *ms, const void *ptr,
                                  size_t bytes);
/* The whole allocation at ptr is scratch: after a resume without backup
 * every element is written before it is read (Megatron zeroes the grad
 * buffer as each step begins, and the step makes every grad), so a resume
 * leaves its elements as the fresh memory has them instead of poisoning
 * them; its padding is zeroed still. On the host device the fresh pages
 * then hold no memory until the step writes them. BS_ERR_INVALID where ptr
 * starts no whole allocation (a segment's block). */
bs_status bs_memsaver_set_scratch(bs_memsaver *ms, const void *ptr);

/* Fatal errors (docs/behavior.md §2): where torch_memory_saver prints its
 * message and calls exit(1), the memory saver returns BS_ERR_FATAL with
 * that message ("[torch_memory_saver.cpp] ..."), remembers the first one
 * (bs_memsaver_fatal) and changes nothing more. Its owner ends the rank: the
 * memory saver knows no communicator. Fatal: a broken pause/resume
 * precondition, get_cpu_backup of a paused allocation without a backup or
 * of a range no allocation holds, a resume that finds no memory
 * (region/resume, torch_memory_saver #87), a physical release the device
 * refuses (free). */
bool bs_memsaver_fatal(const bs_memsaver *ms, bs_error *out);

/* tag == NULL: every allocation. Fatal "Cannot pause allocation that is not
 * active." / "Cannot resume allocation that is not paused." when one
 * matching allocation is in the wrong state (checked before any changes);
 * fatal when a resume finds no memory. A failed backup copy is not fatal
 * (the allocation stays as it was, its backup kept). */
bs_status bs_memsaver_pause(bs_memsaver *ms, const char *tag);
bs_status bs_memsaver_resume(bs_memsaver *ms, const char *tag);

/* The host copy of [ptr, ptr+bytes) taken at the last pause: a view into
 * the backup (zero_copy) or copied into dst. BS_ERR_MISSING_BACKUP (no
 * backup, as the library's None) when the allocation is active; fatal when
 * it is paused without a cpu backup or no allocation holds the range;
 * BS_ERR_INVALID for a missing destination. */
bs_status bs_memsaver_get_cpu_backup(bs_memsaver *ms, const void *ptr,
                                     size_t bytes, bool zero_copy, void *dst,
                                     const void **view);

/* State queries. */
bs_region_state bs_memsaver_state_of(const bs_memsaver *ms, const void *ptr);
/* Made with cpu_backup (pause keeps its bytes); not whether one exists now. */
bool bs_memsaver_has_backup(const bs_memsaver *ms, const void *ptr);
/* Every allocation with this tag (NULL: all) is PAUSED / ACTIVE. */
bool bs_memsaver_all_in_state(const bs_memsaver *ms, const char *tag,
                              bs_region_state s);

/* Resident (mapped) device bytes now and at peak; now, of one tag's
 * allocations. */
size_t bs_memsaver_resident_bytes(const bs_memsaver *ms);
size_t bs_memsaver_resident_tag(const bs_memsaver *ms, const char *tag);
size_t bs_memsaver_resident_peak(const bs_memsaver *ms);

#endif
