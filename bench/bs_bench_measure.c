/* The bench's timing: every figure is the best of a few runs of one
 * operation, each ended by a device sync (and, on a MainCast rank, a
 * barrier), timed with CLOCK_MONOTONIC. */
#include <math.h>
#include <stdio.h>
#include <time.h>

#include "bs_bench_impl.h"

#define GB 1e9

double bs_bench_measure_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* nccl-tests' all-gather bus bandwidth: each rank receives (N-1)/N of the
 * gathered bytes over its links, so busbw compares across world sizes. */
static double bus_factor(const bs_bench_report *r, bool busbw) {
  return busbw && r->ranks > 1 ? (double)(r->ranks - 1) / r->ranks : 1.0;
}

bs_status bs_bench_measure_add_fig(bs_bench_report *r, const bs_bench_op *op,
                                   double bytes, double seconds) {
  if (r->n >= BS_BENCH_MAX_FIGS)
    return bs_err_fail(BS_ERR_INTERNAL, NULL, "bench: more than %d figures",
                       BS_BENCH_MAX_FIGS);
  bs_bench_fig *f = &r->fig[r->n++];
  /* A clock tick is the resolution: a run never takes zero seconds. */
  seconds = seconds > 1e-9 ? seconds : 1e-9;
  *f = (bs_bench_fig){.is_ceiling = op->is_ceiling,
                      .busbw = op->busbw,
                      .bytes = bytes,
                      .seconds = seconds,
                      .gbps = bytes / seconds / GB * bus_factor(r, op->busbw),
                      .ratio = NAN};
  snprintf(f->name, sizeof f->name, "%s", op->name);
  snprintf(f->ceiling, sizeof f->ceiling, "%s", op->ceiling ? op->ceiling : "");
  return BS_OK;
}

bs_status bs_bench_measure_add_derived(bs_bench_report *r,
                                       const bs_bench_op *op, const char *from,
                                       const char *plus) {
  const bs_bench_fig *a = bs_bench_report_find(r, from);
  const bs_bench_fig *c = plus ? bs_bench_report_find(r, plus) : NULL;
  if (!a || (plus && !c))
    return bs_err_fail(BS_ERR_INTERNAL, NULL, "bench: %s: %s is not measured",
                       op->name, !a ? from : plus);
  return bs_bench_measure_add_fig(r, op, a->bytes,
                                  a->seconds + (c ? c->seconds : 0));
}

/* A MainCast rank's runs start and end together on every rank, so rank
 * 0's clock covers the slowest rank and no rank's run overlaps another
 * rank's idle time. */
static bs_status lockstep(bs_bench_state *b) {
  return b->comm ? bs_comm_barrier(b->comm) : BS_OK;
}

/* One run. The teardown runs even after a failed run, so that what the
 * setup or run acquired is given back; the first error wins. */
static bs_status timed(bs_bench_state *b, const bs_bench_op *op, double *secs) {
  bs_status st = BS_OK;
  if (op->setup)
    BS_CHECK(op->setup(b));
  st = lockstep(b);
  double t0 = bs_bench_measure_now_s();
  if (st == BS_OK)
    st = op->run(b);
  if (st == BS_OK)
    st = bs_dev_sync(b->dev);
  if (st == BS_OK)
    st = lockstep(b);
  *secs = bs_bench_measure_now_s() - t0;
  if (op->teardown) {
    bs_status td = op->teardown(b);
    st = st != BS_OK ? st : td;
  }
out:
  return st;
}

/* Best of r->repeat runs after one warm-up run (first touch of pages,
 * lazy driver set-up, cold caches). */
bs_status bs_bench_measure(bs_bench_state *b, const bs_bench_op *op,
                           double bytes) {
  bs_status st = BS_OK;
  double best = INFINITY, t = 0;
  BS_CHECK(timed(b, op, &t));
  for (int i = 0; i < b->r->repeat; i++) {
    BS_CHECK(timed(b, op, &t));
    best = fmin(best, t);
  }
  BS_CHECK(bs_bench_measure_add_fig(b->r, op, bytes, best));
out:
  return st;
}
