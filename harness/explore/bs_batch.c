#include "explore/bs_batch.h"

#include "run/bs_child.h"
#include "run/bs_parent.h"
#include "run/bs_pool.h"

/* The line as the batch stands: its label, counts so far and budget (the
 * failures are the line's own, counted run by run). */
static void line_of(bs_batch *b) {
  if (!b->line.t0)
    bs_progress_init(&b->line, b->out, b->label);
  if (b->line.label != b->label) /* another phase: its own counts */
    b->line.what[0] = '\0';
  b->line.label = b->label;
  b->line.done = b->done;
  b->line.total = b->total;
  b->line.budget_s = b->budget_s;
}

void bs_batch_line(bs_batch *b, const char *what) {
  line_of(b);
  bs_progress_show(&b->line, what);
}

void bs_batch_end(bs_batch *b) {
  bs_progress_end(&b->line);
}

bs_status bs_batch_run(bs_batch *b, const bs_run *cfgs, size_t n,
                       bs_result *out) {
  bs_status st = BS_OK;
  size_t chunk = (size_t)(b->jobs > 0 ? b->jobs : 1) * BS_BATCH_CHUNK_PER_JOB;
  bs_parent_opts po = {.jobs = b->jobs,
                       .verbosity = -1,
                       .child = bs_child_run,
                       .start = bs_child_start,
                       .keep = bs_child_keep,
                       .progress = &b->line,
                       .settle = b->settle,
                       .settle_arg = b->settle_arg};
  for (size_t i = 0; i < n; i += chunk) {
    size_t m = n - i < chunk ? n - i : chunk;
    line_of(b);
    BS_CHECK(bs_pool_run_all(cfgs + i, m, &po, out + i));
    for (size_t k = i; k < i + m;
         k++) /* a run a signal cut short is not done */
      b->done += out[k].verdict != BS_INTERRUPTED;
    bs_batch_line(b, NULL);
  }
out:
  return st;
}
