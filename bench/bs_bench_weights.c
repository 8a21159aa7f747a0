#include "bs_bench_impl.h"

/* Weights are a seeded pattern written on the device: throughput does not
 * depend on the values, and a host-generated fill of several GB would
 * cost more than the whole bench. */
void bs_bench_weights_fill(bs_bench_state *b) {
  const bs_params *p = b->params;
  for (int k = 0; k < BS_BUF_COUNT; k++)
    if (p->param_buf[k])
      bs_dev_poison(b->dev, p->param_buf[k],
                    p->layout.buf[k].numel * sizeof(uint16_t),
                    BS_BENCH_SEED + k);
  for (size_t i = 0; i < p->n; i++)
    if (p->t[i].buffer < 0 && p->t[i].bytes)
      bs_dev_poison(b->dev, p->t[i].ptr, p->t[i].bytes, BS_BENCH_SEED + 2 + i);
}
