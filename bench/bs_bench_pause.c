/* The memory saver's pause and resume figures of `backstop bench`, for a
 * region with cpu backup and one without. */
#include "bs_bench_impl.h"

static bs_status do_pause(bs_bench_state *b) {
  return bs_memsaver_pause(b->ms, b->tag);
}

static bs_status do_resume(bs_bench_state *b) {
  return bs_memsaver_resume(b->ms, b->tag);
}

/* With backup: pause allocates pinned memory and copies out; resume copies
 * back. Without: pause only unmaps (no ceiling); resume maps and writes the
 * poison pattern over every byte, a device fill. */
static const bs_bench_op op_pause_bk = {.name = "pause_backup",
                                        .ceiling = "pinned_alloc+d2h",
                                        .run = do_pause,
                                        .teardown = do_resume};
static const bs_bench_op op_resume_bk = {.name = "resume_backup",
                                         .ceiling = "h2d_copy",
                                         .setup = do_pause,
                                         .run = do_resume};
static const bs_bench_op op_pause_nobk = {
    .name = "pause_nobackup", .run = do_pause, .teardown = do_resume};
static const bs_bench_op op_resume_nobk = {.name = "resume_nobackup",
                                           .ceiling = "d2d_copy",
                                           .setup = do_pause,
                                           .run = do_resume};

static bs_status pause_resume_one(bs_bench_state *b, const char *tag,
                                  bool backup, const bs_bench_op *pause,
                                  const bs_bench_op *resume) {
  bs_status st = BS_OK;
  void *p = NULL;
  BS_CHECK(bs_memsaver_alloc(b->ms, tag, backup, b->bytes, &p));
  /* resident, as weights */
  bs_dev_poison(b->dev, p, b->bytes, BS_BENCH_SEED);
  b->tag = tag;
  BS_CHECK(bs_bench_measure(b, pause, (double)b->bytes));
  BS_CHECK(bs_bench_measure(b, resume, (double)b->bytes));
out:
  if (p)
    bs_memsaver_free(b->ms, p);
  return st;
}

bs_status bs_bench_pause_resume(bs_bench_state *b) {
  bs_status st = BS_OK;
  BS_CHECK(
      pause_resume_one(b, "bench_backup", true, &op_pause_bk, &op_resume_bk));
  BS_CHECK(pause_resume_one(b, "bench_nobackup", false, &op_pause_nobk,
                            &op_resume_nobk));
out:
  return st;
}
