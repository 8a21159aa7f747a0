/* The mutant switches (docs/behavior.md §8). Set before a run starts (runs are
 * forked children) and only read by the rank threads, so relaxed atomics
 * suffice; atomics keep TSan quiet about the odd set during a run. */
#include "bs_mutant.h"

#include <stdatomic.h>
#include <string.h>

static const struct mutant_info {
  const char *name, *origin, *effect;
  bool ordering;
} mutants[BS_MUT_COUNT] = {
#define BS_MUTANT(id, name_, origin_, effect_, ordering_)                      \
  [BS_MUT_##id] = {.name = name_,                                              \
                   .origin = origin_,                                          \
                   .effect = effect_,                                          \
                   .ordering = ordering_},
#include "bs_mutants.def"
#undef BS_MUTANT
};

static atomic_bool enabled[BS_MUT_COUNT];

static bool valid(bs_mutant m) {
  return (unsigned)m < BS_MUT_COUNT;
}

bool bs_mutant_in(bs_mutants s, bs_mutant m) {
  return valid(m) && (s.bits >> m & 1u);
}

bs_mutants bs_mutant_with(bs_mutants s, bs_mutant m) {
  if (valid(m))
    s.bits |= 1u << m;
  return s;
}

bs_mutants bs_mutant_of(const bs_mutant *ids, size_t n) {
  bs_mutants s = {0};
  for (size_t i = 0; i < n; i++)
    s = bs_mutant_with(s, ids[i]);
  return s;
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

bool bs_mutant_ordering(bs_mutant m) {
  return valid(m) && mutants[m].ordering;
}

int bs_mutant_parse(const char *name) {
  for (int m = 0; name && m < BS_MUT_COUNT; m++)
    if (strcmp(mutants[m].name, name) == 0)
      return m;
  return -1;
}
