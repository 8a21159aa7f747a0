/* Mutants: historical bugs kept as runtime switches (behavior.md §8). All
 * default off. Each use site carries a comment naming the mutant's origin. */
#ifndef BS_MUTANT_H
#define BS_MUTANT_H

#include <stdbool.h>

typedef enum bs_mutant {
  BS_MUT_PAUSE_NOT_IN_FINALLY = 0, /* miles #1572 as merged */
  BS_MUT_LOCAL_HASH_RAISE,         /* miles #1572 */
  BS_MUT_SKIP_FROZEN_BACKUP,       /* miles #2223, b396e1f (reverted) */
  BS_MUT_FROZEN_NOT_EXTRAS,        /* miles #1572 final code */
  BS_MUT_SAME_TAG_SKIP,            /* review diff of miles #3128 */
  BS_MUT_ASLEEP_READS_DEVICE,      /* before miles #3128 */
  BS_MUT_OFFLOAD_DROPS_BACKUP,     /* before miles #3128 */
  BS_MUT_LORA_DOUBLE_BACKUP,       /* before the colocated-LoRA fix */
  BS_MUT_DISK_OFFLOAD_ACCEPTED,    /* validation gap */
  BS_MUT_COUNT
} bs_mutant;

bool bs_mutant_on(bs_mutant m);
void bs_mutant_set(bs_mutant m, bool on);
void bs_mutant_reset(void);
const char *bs_mutant_name(bs_mutant m); /* "pause-not-in-finally" */
const char *bs_mutant_origin(bs_mutant m);
const char *bs_mutant_effect(bs_mutant m); /* what goes wrong */
int bs_mutant_parse(const char *name);     /* -1 when unknown */

#endif
