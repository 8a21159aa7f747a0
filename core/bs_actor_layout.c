/* What an actor's init would lay out, asked before a run (bs_actor.h). */
#include "bs_actor.h"

#include "model/bs_ddp.h"
#include "train/bs_optimizer.h"

size_t bs_actor_layout_bucket_numel(const bs_config *cfg, int ranks) {
  if (bs_optimizer_cfg_of(cfg).chunks > 1)
    return cfg->sim.bucket_numel;
  return bs_ddp_bucket_numel(cfg->sim.bucket_numel, ranks);
}

bs_status bs_actor_layout_check(const bs_model_spec *m, int ranks,
                                const bs_config *cfg) {
  bs_status st = BS_OK;
  bs_ddp_layout l = {0};
  BS_CHECK(bs_ddp_layout_build(m, ranks,
                               bs_actor_layout_bucket_numel(cfg, ranks), &l));
  bs_optimizer_cfg oc = bs_optimizer_cfg_of(cfg);
  BS_CHECK(bs_optimizer_layout_check(&oc, &l));
out:
  bs_ddp_layout_free(&l);
  return st;
}

bs_status bs_actor_layout_numel(const bs_model_spec *m, int ranks,
                                const bs_config *cfg, double *out) {
  bs_status st = BS_OK;
  bs_ddp_layout l = {0};
  BS_CHECK(bs_ddp_layout_build(m, ranks,
                               bs_actor_layout_bucket_numel(cfg, ranks), &l));
  *out = 0;
  for (int k = 0; k < BS_BUF_COUNT; k++)
    *out += (double)l.buf[k].numel;
out:
  bs_ddp_layout_free(&l);
  return st;
}
