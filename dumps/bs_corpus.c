/* A corpus program (bs_corpus.h): drawn, issued until no rank can move,
 * its truth worked out; drawn again, from the next attempt of its seed,
 * while the dumps would not show its fault. */
#include "bs_corpus.h"

#include <stdlib.h>

#include "bs_corpus_int.h"
#include "bs_dumps_match.h"

enum { ATTEMPTS = 64 };

static void unexec(bs_corpus *c) {
  for (int r = 0; c->st && r < c->world; r++)
    free(c->st[r].e);
  free(c->st);
  c->st = NULL;
}

/* One attempt: *shows when its dumps would show its fault. */
static bs_status attempt(bs_corpus *c, const bs_corpus_limits *lim, uint64_t k,
                         bool *shows) {
  bs_status st = bs_corpus_gen_draw(c, lim, k);
  *shows = false;
  if (st == BS_ERR_INVALID) { /* nothing of that fault to apply */
    bs_err_clear();
    return BS_OK;
  }
  if (st == BS_OK)
    st = bs_corpus_exec_run(c);
  if (st == BS_OK)
    st = bs_corpus_truth_make(c, shows);
  return st;
}

bs_status bs_corpus_make(uint64_t seed, uint64_t index,
                         const bs_corpus_limits *lim, bs_corpus **out) {
  bs_status st = BS_OK;
  bs_corpus *c = calloc(1, sizeof *c);
  bool shows = false;
  *out = NULL;
  if (!c)
    BS_FAIL(BS_ERR_NOMEM, NULL, "corpus: a program");
  c->seed = seed;
  c->index = index;
  for (uint64_t k = 0; k < ATTEMPTS && !shows; k++) {
    if (k) {
      unexec(c);
      bs_corpus_gen_free(c);
    }
    BS_CHECK(attempt(c, lim, k, &shows));
  }
  if (!shows)
    BS_FAIL(BS_ERR_INTERNAL, NULL,
            "corpus: seed %llu program %llu: no draw of %d shows its fault",
            (unsigned long long)seed, (unsigned long long)index, ATTEMPTS);
  *out = c;
  c = NULL;
out:
  bs_corpus_free(c);
  return st;
}

void bs_corpus_free(bs_corpus *c) {
  if (!c)
    return;
  unexec(c);
  bs_corpus_gen_free(c);
  free(c->truth);
  free(c);
}

int bs_corpus_ranks(const bs_corpus *c) {
  return c->world;
}

const char *bs_corpus_fault(const bs_corpus *c) {
  return c->what;
}

bool bs_corpus_score(const char *truth, const char *got, bool replayed,
                     char *why, size_t n) {
  return bs_dumps_match_json(truth, got, replayed, why, n);
}
