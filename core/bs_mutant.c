/* The mutant switches (behavior.md §8). Set before a run starts (runs are
 * forked children) and only read by the rank threads, so relaxed atomics
 * suffice; atomics keep TSan quiet about the odd set during a run. */
#include "bs_mutant.h"

#include <stdatomic.h>
#include <string.h>

static const struct mutant_info {
  const char *name, *origin, *effect;
} mutants[BS_MUT_COUNT] = {
    [BS_MUT_PAUSE_NOT_IN_FINALLY] =
        {"pause-not-in-finally", "miles #1572 as merged",
         "engine death in update_weights leaves the param buffer resident; "
         "next wake-up hits \"cannot resume allocation that is not paused\""},
    [BS_MUT_LOCAL_HASH_RAISE] =
        {"local-hash-raise", "miles #1572",
         "a SHA256 mismatch raises on one rank after the all-gather; the "
         "others enter the next collective and hang"},
    [BS_MUT_SKIP_FROZEN_BACKUP] =
        {"skip-frozen-backup", "miles #2223, commit b396e1f (reverted)",
         "frozen params are taken from the memory saver on ranks where that "
         "looks possible, so ranks hand different tensor sets to weight "
         "sync: some ranks in ALLGATHER, others in REDUCE_SCATTER, hang"},
    [BS_MUT_FROZEN_NOT_EXTRAS] = {"frozen-not-extras", "miles #1572 final code",
                                  "init rejects every model with a frozen "
                                  "param"},
    [BS_MUT_SAME_TAG_SKIP] = {"same-tag-skip", "review diff of miles #3128",
                              "switch_model skips restore of the active tag; "
                              "MainCast weights stay garbage after wake-up"},
    [BS_MUT_ASLEEP_READS_DEVICE] = {"asleep-reads-device", "before miles #3128",
                                    "weight sync of an asleep, offloaded "
                                    "trainer reads unmapped device memory"},
    [BS_MUT_OFFLOAD_DROPS_BACKUP] =
        {"offload-drops-backup", "before miles #3128",
         "no ref/teacher/colocate under offload -> no backup; the next sync "
         "has no source"},
    [BS_MUT_LORA_DOUBLE_BACKUP] =
        {"lora-double-backup", "before the colocated-LoRA fix",
         "a pinned copy duplicates the memory saver's host backup: host "
         "memory over budget"},
    [BS_MUT_DISK_OFFLOAD_ACCEPTED] =
        {"disk-offload-accepted", "validation gap",
         "rematerialize accepted with offload target disk; there is no host "
         "backup to rebuild around"},
};

static atomic_bool enabled[BS_MUT_COUNT];

static bool valid(bs_mutant m) {
  return (unsigned)m < BS_MUT_COUNT;
}

bool bs_mutant_on(bs_mutant m) {
  return valid(m) && atomic_load_explicit(&enabled[m], memory_order_relaxed);
}

void bs_mutant_set(bs_mutant m, bool on) {
  if (valid(m))
    atomic_store_explicit(&enabled[m], on, memory_order_relaxed);
}

void bs_mutant_reset(void) {
  for (int m = 0; m < BS_MUT_COUNT; m++)
    bs_mutant_set((bs_mutant)m, false);
}

const char *bs_mutant_name(bs_mutant m) {
  return valid(m) ? mutants[m].name : "unknown";
}

const char *bs_mutant_origin(bs_mutant m) {
  return valid(m) ? mutants[m].origin : "";
}

const char *bs_mutant_effect(bs_mutant m) {
  return valid(m) ? mutants[m].effect : "";
}

int bs_mutant_parse(const char *name) {
  for (int m = 0; name && m < BS_MUT_COUNT; m++)
    if (strcmp(mutants[m].name, name) == 0)
      return m;
  return -1;
}
