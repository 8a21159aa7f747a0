#include "explore/bs_batch.h"

#include "run/bs_child.h"
#include "run/bs_parent.h"

void bs_batch_line(const bs_batch *b, const char *what) {
  if (!b->tty)
    return;
  fprintf(b->tty, "\r\033[K%s %zu/%zu%s%s", b->label, b->done, b->total,
          what && *what ? " " : "", what ? what : "");
  fflush(b->tty);
}

void bs_batch_end(const bs_batch *b) {
  if (b->tty) {
    fprintf(b->tty, "\r\033[K");
    fflush(b->tty);
  }
}

bs_status bs_batch_run(bs_batch *b, const bs_run_cfg *cfgs, size_t n,
                       bs_result *out) {
  bs_status st = BS_OK;
  size_t chunk = (size_t)(b->jobs > 0 ? b->jobs : 1) * BS_BATCH_CHUNK_PER_JOB;
  bs_parent_opts po = {.jobs = b->jobs, .verbosity = -1, .child = bs_child_run};
  for (size_t i = 0; i < n; i += chunk) {
    size_t m = n - i < chunk ? n - i : chunk;
    BS_CHECK(bs_parent_run(cfgs + i, m, &po, out + i));
    b->done += m;
    bs_batch_line(b, NULL);
  }
out:
  return st;
}
