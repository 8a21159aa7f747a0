/* The observers of an actor that the oracles read (bs_core_testing.h):
 * they look past the fault points and leave the actor as it was. */
#include <stdio.h>
#include <stdlib.h>

#include "backup/bs_restore_check.h"
#include "bs_actor_testing.h"
#include "bs_core_testing.h"
#include "memsaver/bs_memsaver.h"
#include "model/bs_params.h"
#include "train/bs_optimizer.h"

size_t bs_actor_observe_resident(bs_actor *a) {
  return bs_memsaver_resident_bytes(bs_actor_ms(a));
}

size_t bs_actor_observe_resident_peak(bs_actor *a) {
  return bs_memsaver_resident_peak(bs_actor_ms(a));
}

size_t bs_actor_observe_resident_params(bs_actor *a) {
  return bs_memsaver_resident_tag(bs_actor_ms(a), BS_TAG_PARAM);
}

bool bs_actor_observe_params_paused(bs_actor *a) {
  return bs_memsaver_all_in_state(bs_actor_ms(a), BS_TAG_PARAM, BS_PAUSED);
}

bool bs_actor_observe_chain(bs_actor *a, int *inner, int *hdo, char *desc,
                            size_t n) {
  const bs_optimizer *o = bs_actor_optimizer(a);
  if (!o)
    return false;
  size_t len = 0, k = bs_optimizer_num_inner(o);
  *inner = (int)k;
  *hdo = 0;
  for (size_t i = 0; i < k; i++) {
    bs_optimizer_view v;
    if (bs_optimizer_view_get(o, (int)i, &v) != BS_OK) {
      bs_err_clear();
      continue;
    }
    *hdo += v.hdo;
    if (len < n)
      len +=
          (size_t)snprintf(desc + len, n - len, "%s%s %zu+%zu", i ? ", " : "",
                           v.buf == BS_BUF_DENSE ? "dense" : "expert",
                           v.first_bucket, v.nbuckets);
  }
  return true;
}

bs_status bs_actor_observe_initial(const bs_model_spec *m, const bs_config *cfg,
                                   uint64_t seed, bs_digest **dig,
                                   const char ***names, size_t *n) {
  bs_status st = BS_OK;
  bs_dev *dev = NULL;
  bs_memsaver *ms = NULL;
  bs_params *p = NULL;
  const bs_tensor **t = NULL;
  *dig = NULL;
  *names = NULL;
  *n = 0;
  BS_CHECK(bs_dev_host_create(&dev));
  BS_CHECK(bs_memsaver_create(dev, seed, &ms));
  BS_CHECK(bs_params_create(dev, ms, m, 1, cfg->sim.bucket_numel, true, &p));
  BS_CHECK(bs_params_fill_observe(p, seed));
  size_t k = bs_params_synced(p, NULL, 0);
  t = calloc(k ? k : 1, sizeof *t);
  *dig = calloc(k ? k : 1, sizeof **dig);
  *names = calloc(k ? k : 1, sizeof **names);
  if (!t || !*dig || !*names)
    BS_FAIL(BS_ERR_NOMEM, NULL, "digests of %zu initial tensors", k);
  bs_params_synced(p, t, k);
  for (size_t i = 0; i < k; i++)
    (*names)[i] = t[i]->spec->name;
  BS_CHECK(bs_restore_check_hash_observe(dev, ms, t, k, *dig, NULL));
  *n = k;
out:
  if (st != BS_OK) {
    free(*dig);
    free(*names);
    *dig = NULL;
    *names = NULL;
  }
  free(t);
  bs_params_destroy(p);
  bs_memsaver_destroy(ms);
  bs_dev_destroy(dev);
  return st;
}
