/* The Adam step on the host, and its per-step hyper-parameters. */
#include "bs_kernel_elem.h"

#include <math.h>

bs_adam_hp bs_k_adam_hp_make(float lr, float beta1, float beta2, float eps,
                             float weight_decay, int step) {
  /* Step 0 would divide by a zero bias correction. */
  int s = step < 1 ? 1 : step;
  bs_adam_hp hp = {.lr = lr,
                   .beta1 = beta1,
                   .beta2 = beta2,
                   .eps = eps,
                   .weight_decay = weight_decay,
                   .bias_corr1 = (float)(1.0 - pow((double)beta1, s)),
                   .bias_corr2 = (float)(1.0 - pow((double)beta2, s))};
  return hp;
}

void bs_k_adam(float *param, float *m, float *v, const float *grad, size_t n,
               const bs_adam_hp *hp) {
  for (size_t i = 0; i < n; i++)
    bs_ke_adam(&param[i], &m[i], &v[i], grad[i], hp);
}
