/* The one table of fault points: what `backstop faults` lists and what a
 * fault spec may name. */
#include "bs_fault.h"

#include <string.h>

static const bs_fault_point catalogue[] = {
    {"engine/send",
     "weight sync, sending a bucket to the engine: the sender kills the "
     "engine at the nth bucket send",
     "unused (use nth to pick the bucket)"},
    {"engine/verify",
     "weight sync, the engine's check of a received bucket: "
     "the engine reports a mismatch",
     "low 32 bits: index of the tensor in the update whose received bytes "
     "get a bit flipped (past the end: the last); high 32 bits: the bit"},
    {"restore/bitflip", "restore, after a param's bytes are copied back",
     "bit index to flip in the restored param"},
    {"backup/corrupt", "backup, after a pinned extra is written",
     "bit index to flip in the pinned extra"},
    {"master/corrupt", "MainCast restore, before the cast from the master",
     "bit index to flip in the master weight"},
    {"backup/pin_alloc", "a backuper's pinned host allocation: it fails",
     "unused"},
    {"copy/fail", "a device/host copy: it fails", "unused"},
    {"optimizer/step",
     "the optimizer step (Adam over the rank's master shard), before it "
     "touches anything: it runs out of memory",
     "unused"},
    {"region/resume", "memory saver resume: it finds no memory", "unused"},
    {"comm/rank_exit", "before a collective: the rank dies", "unused"},
    {"comm/stall", "before a collective: the rank sleeps",
     "milliseconds to sleep"},
    {"comm/diverge", "a collective: the rank issues a different one",
     "odd: an extra barrier first; even: a different collective of the same "
     "bytes"},
    {"sync/tensor_set",
     "weight sync, building the tensor set: this rank's set differs", "unused"},
    {NULL, NULL, NULL},
};

const bs_fault_point *bs_fault_catalogue(void) {
  return catalogue;
}

int bs_fault_index(const char *name) {
  for (int i = 0; name && catalogue[i].name; i++)
    if (strcmp(catalogue[i].name, name) == 0)
      return i;
  return -1;
}

const bs_fault_point *bs_fault_find(const char *name) {
  int i = bs_fault_index(name);
  return i < 0 ? NULL : &catalogue[i];
}

bool bs_fault_name_matches(const char *pattern, const char *point) {
  size_t n = strlen(pattern);
  if (n > 0 && pattern[n - 1] == '*')
    return strncmp(pattern, point, n - 1) == 0;
  return strcmp(pattern, point) == 0;
}

bool bs_fault_name_valid(const char *name) {
  if (!name || !*name || strlen(name) >= BS_FAULT_NAME_MAX)
    return false;
  /* libfiu only knows a trailing wildcard; a '*' elsewhere matches nothing. */
  const char *star = strchr(name, '*');
  if (star && star[1] != '\0')
    return false;
  for (int i = 0; catalogue[i].name; i++)
    if (bs_fault_name_matches(name, catalogue[i].name))
      return true;
  return false;
}
