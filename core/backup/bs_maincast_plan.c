/* The MainCast context and its coverage check (bs_maincast_plan.h). */
#include "backup/bs_maincast_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_mutant.h"

bool bs_maincast_plan_is_extra(const bs_tensor_spec *t) {
  bool param = bs_tensor_is_param(t);
  /* Mutant frozen-not-extras (miles #1572 final code): frozen params are
   * not extras, so the coverage check rejects every model with one. */
  bool frozen = param && (t->flags & BS_TF_FROZEN) &&
                !bs_mutant_on(BS_MUT_FROZEN_NOT_EXTRAS);
  return (t->flags & BS_TF_EXPERT_BIAS) || (param && (t->flags & BS_TF_FP32)) ||
         frozen;
}

bool bs_maincast_plan_rematerializable(const bs_tensor *t) {
  return t->buffer >= 0;
}

bs_status bs_maincast_plan_create(bs_params *p, bs_optimizer *opt, bs_comm *c,
                                  bs_maincast_plan **out) {
  bs_status st = BS_OK;
  bs_maincast_plan *mc = NULL;
  const bs_tensor **src = NULL;
  size_t n = 0;
  if (!p || !opt || !c || !out)
    BS_FAIL(BS_ERR_INVALID, NULL, "maincast: NULL argument");
  /* At once, not at the first restore: a master kept as bf16 + remainder
   * can never rebuild the params. */
  BS_CHECK(bs_optimizer_check_rebuildable(opt));
  if (!(mc = calloc(1, sizeof *mc)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "maincast: out of memory");
  mc->p = p;
  mc->opt = opt;
  mc->comm = c;
  BS_CHECK(bs_source_create(p, &mc->src));
  BS_CHECK(bs_source_list(mc->src, &src, &n));
  if (!(mc->extras = calloc(n ? n : 1, sizeof *mc->extras)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "maincast: %zu extras", n);
  for (size_t i = 0; i < n; i++) {
    if (!bs_maincast_plan_is_extra(src[i]->spec))
      continue;
    mc->extras[mc->nextras++] = src[i];
    mc->extras_bytes += src[i]->bytes;
  }
  *out = mc;
  mc = NULL;
out:
  free(src);
  bs_maincast_plan_destroy(mc);
  return st;
}

void bs_maincast_plan_destroy(bs_maincast_plan *mc) {
  if (!mc)
    return;
  bs_source_destroy(mc->src);
  free(mc->extras);
  free(mc);
}

static bool covered(const bs_tensor *t) {
  return !bs_tensor_is_param(t->spec) || bs_maincast_plan_rematerializable(t) ||
         bs_maincast_plan_is_extra(t->spec);
}

bs_status bs_maincast_plan_check_coverage(const bs_maincast_plan *mc) {
  bs_status st = BS_OK;
  char list[200] = "";
  size_t bad = 0, len = 0;
  const char *first = NULL;
  if (!mc)
    BS_FAIL(BS_ERR_INVALID, NULL, "maincast coverage: no context");
  for (size_t i = 0; i < mc->p->n; i++) {
    const bs_tensor *t = &mc->p->t[i];
    if (covered(t))
      continue;
    first = first ? first : t->spec->name;
    if (len < sizeof list - 1)
      len += (size_t)snprintf(list + len, sizeof list - len, "%s%s",
                              bad ? ", " : "", t->spec->name);
    bad++;
  }
  if (bad)
    BS_FAIL(BS_ERR_COVERAGE, first,
            "rematerialize: %zu params are neither in a DDP buffer nor "
            "extras: %s",
            bad, list);
out:
  return st;
}
