/* A resume finds no memory (torch_memory_saver #87): wake_up fails on
 * every rank alike instead of one rank dying. */
#include "bs_expect.h"
#include "bs_scenario.h"

static bool expect(const bs_record *r, char *d, size_t n) {
  return bs_expect_failed_and_stopped(r, "wake_up", BS_ERR_NOMEM, false, d, n);
}

BS_SCENARIO(resume_oom){
    .name = "resume-oom",
    .labels = "@smoke @fault",
    .summary = "the last rank's wake-up finds no memory",
    .details = "MainCast; in cycle 1 the memory saver's resume fails on the "
               "last rank.",
    .model = "tiny",
    .cycles = 3,
    .default_ranks = 4,
    .min_ranks = 1,
    .sets = BS_LIST("rematerialize=1"),
    .faults = BS_LIST("name=region/resume,rank={last},cycle=1,nth=1"),
    .expect = expect,
    .expects = "every rank fails wake_up with out-of-memory; nothing runs "
               "after it",
};
