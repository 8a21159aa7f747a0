/* A result packed (bs_result_pack): the struct's own bytes, then each
 * array and string it points to. */
#include <stdint.h>
#include <string.h>

#include "bs_pack.h"
#include "result/bs_result.h"

#define MAGIC "bsres\0\1\0"

/* The layout it was written with: a mismatch means another build. */
typedef struct header {
  char magic[8];
  uint32_t sizes[5];
} header;

static void sizes(uint32_t s[5]) {
  s[0] = sizeof(bs_result);
  s[1] = sizeof(bs_armed);
  s[2] = sizeof(bs_oracle_result);
  s[3] = sizeof(bs_rank_outcome);
  s[4] = sizeof(bs_fault_reach);
}

void bs_result_pack(bs_buf *b, const bs_result *r) {
  header h = {0};
  memcpy(h.magic, MAGIC, sizeof h.magic);
  sizes(h.sizes);
  bs_pack_put(b, &h, sizeof h);
  bs_pack_put(b, r, sizeof *r);
  bs_pack_put_strs(b, r->faults, r->nfaults);
  bs_pack_put_array(b, r->armed, r->narmed, sizeof *r->armed);
  bs_pack_put_array(b, r->reaches, r->nreaches, sizeof *r->reaches);
  bs_pack_put_strs(b, r->mutants, r->nmutants);
  bs_pack_put_array(b, r->oracles, r->noracles, sizeof *r->oracles);
  bs_pack_put_array(b, r->outcomes, r->noutcomes, sizeof *r->outcomes);
  bs_pack_put_strs(b, r->flight, r->nflight);
  bs_pack_put_str(b, r->trace);
  bs_pack_put_str(b, r->report);
  bs_pack_put_str(b, r->note);
  bs_pack_put_str(b, r->repro);
}

static bs_status take_header(bs_pack_cursor *c) {
  bs_status st = BS_OK;
  header h;
  uint32_t want[5];
  sizes(want);
  BS_CHECK(bs_pack_take(c, &h, sizeof h));
  if (memcmp(h.magic, MAGIC, sizeof h.magic) != 0 ||
      memcmp(h.sizes, want, sizeof want) != 0)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "%s: not a run result of this build of backstop", c->what);
out:
  return st;
}

/* The scalars as written; every pointer and count from what follows. */
static bs_status take_fixed(bs_pack_cursor *c, bs_result *r) {
  bs_status st = bs_pack_take(c, r, sizeof *r);
  bs_result fixed = *r;
  memset(r, 0, sizeof *r);
  if (st != BS_OK)
    return st;
  memcpy(r->scenario, fixed.scenario, sizeof r->scenario);
  r->ranks = fixed.ranks;
  memcpy(r->backend, fixed.backend, sizeof r->backend);
  memcpy(r->device, fixed.device, sizeof r->device);
  r->seed = fixed.seed;
  memcpy(r->schedule, fixed.schedule, sizeof r->schedule);
  r->schedule_seed = fixed.schedule_seed;
  memcpy(r->model, fixed.model, sizeof r->model);
  r->scale = fixed.scale;
  r->cycles = fixed.cycles;
  r->verdict = fixed.verdict;
  r->duration_ms = fixed.duration_ms;
  r->detect_ms = fixed.detect_ms;
  r->pinned_max = fixed.pinned_max;
  r->resident_max = fixed.resident_max;
  return BS_OK;
}

static bs_status take_arrays(bs_pack_cursor *c, bs_result *r) {
  bs_status st = BS_OK;
  BS_CHECK(bs_pack_take_strs(c, &r->faults, &r->nfaults));
  BS_CHECK(
      bs_pack_take_array(c, sizeof *r->armed, (void **)&r->armed, &r->narmed));
  BS_CHECK(bs_pack_take_array(c, sizeof *r->reaches, (void **)&r->reaches,
                              &r->nreaches));
  BS_CHECK(bs_pack_take_strs(c, &r->mutants, &r->nmutants));
  BS_CHECK(bs_pack_take_array(c, sizeof *r->oracles, (void **)&r->oracles,
                              &r->noracles));
  BS_CHECK(bs_pack_take_array(c, sizeof *r->outcomes, (void **)&r->outcomes,
                              &r->noutcomes));
  BS_CHECK(bs_pack_take_strs(c, &r->flight, &r->nflight));
  BS_CHECK(bs_pack_take_str(c, &r->trace));
  BS_CHECK(bs_pack_take_str(c, &r->report));
  BS_CHECK(bs_pack_take_str(c, &r->note));
  BS_CHECK(bs_pack_take_str(c, &r->repro));
out:
  return st;
}

bs_status bs_result_pack_read(const char *data, size_t n, bs_result *out) {
  bs_status st = BS_OK;
  bs_pack_cursor c = {.p = data, .end = data + n, .what = "run result"};
  memset(out, 0, sizeof *out);
  BS_CHECK(take_header(&c));
  BS_CHECK(take_fixed(&c, out));
  BS_CHECK(take_arrays(&c, out));
  BS_CHECK(bs_pack_end(&c));
out:
  if (st != BS_OK)
    bs_result_free(out);
  return st;
}
