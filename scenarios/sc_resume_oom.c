/* A resume finds no memory (torch_memory_saver #87): wake_up fails on
 * every rank alike instead of one rank dying. */
#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

static bool expect(const bs_record *r, char *d, size_t n) {
  return bs_expect_failed_and_stopped(r, "wake_up", BS_ERR_NOMEM, false, d, n);
}

BS_SCENARIO(resume_oom){
    .name = "resume-oom",
    .labels = "@smoke @fault",
    .summary = "the last rank's wake-up finds no memory",
    .details =
        "MainCast (rematerialize=1) on the tiny model: sleep pauses "
        "grad_buffer and default, update_weights pauses param_buffer, "
        "wake_up resumes them all.\n"
        "Fault: region/resume on the last rank, cycle 1, nth=1: the first "
        "memory-saver resume of cycle 1 is wake_up's (MainCast's sync "
        "resumes nothing), after one full clean cycle. The real library "
        "kills the process here (torch_memory_saver #87); the fixed core "
        "reports out-of-memory and keeps the region paused with its "
        "backup.\n"
        "Expects: every rank fails wake_up of cycle 1 with out-of-memory "
        "and the run stops there.",
    .sets = BS_LIST("rematerialize=1"),
    .faults = BS_LIST("name=region/resume,rank={last},cycle=1,nth=1"),
    .expect = expect,
    .expects = "every rank fails wake_up (cycle 1) with out-of-memory; "
               "nothing runs after it",
};
