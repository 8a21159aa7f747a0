/* `backstop sweep SCENARIO...`: every reach of every fault point, one run
 * each (harness/explore/bs_sweep_campaign.h), as a matrix of points x outcomes.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bs_cmd.h"
#include "bs_json_write.h"
#include "bs_stop.h"
#include "explore/bs_sweep_campaign.h"
#include "plan/bs_plan.h"
#include "report/bs_report.h"

/* ---- the matrix ---- */

typedef struct row {
  size_t reaches, swept, out[BS_SWEEP_OUTCOMES];
} row;

static void rows(const bs_sweep_campaign *w, const bs_swept *s, row *t) {
  bs_sweep_filter f = bs_sweep_campaign_filter(w, 0);
  memset(t, 0, BS_FP_COUNT * sizeof *t);
  for (size_t i = 0; i < s->count.nreaches; i++) {
    const bs_fault_reach *r = &s->count.reaches[i];
    if ((unsigned)r->point < BS_FP_COUNT && bs_sweep_keeps(&f, r))
      t[r->point].reaches += (size_t)r->count;
  }
  for (size_t i = s->first; i < s->first + s->n; i++) {
    const bs_run *run = &w->runs[i];
    int p = bs_fault_catalogue_index(run->faults[run->nfaults - 1].spec.name);
    t[p].swept += w->first[i];
    t[p].out[bs_sweep_judge(&w->res[i], s->fixed)]++;
  }
}

static void print_head(FILE *out, const bs_sweep_campaign *w,
                       const bs_swept *s) {
  const bs_run *b = s->base;
  fprintf(out, "\nsweep %s, %d rank%s, %d cycle%s: ", b->scn->name, b->ranks,
          b->ranks == 1 ? "" : "s", b->cycles, b->cycles == 1 ? "" : "s");
  if (!bs_sweep_campaign_count_ok(s)) {
    fprintf(out, "the counting pass did not pass (%s): nothing swept\n",
            bs_result_verdict_name(s->count.verdict));
    bs_report_table_line(out, &s->count, 0);
    return;
  }
  if (s->count.nreaches == 0) {
    fprintf(out, "no fault point was reached%s: nothing to sweep\n",
            b->scn->drive ? " (its own driver runs no ranks)" : "");
    return;
  }
  fprintf(out, "%zu reaches%s; %zu swept", s->total,
          w->o.npoints || w->o.rank >= 0 || w->o.cycle >= 0
              ? " kept by the filters"
              : "",
          s->swept);
  if (s->total > s->sampled) {
    char size[24];
    if (w->o.sample_pct)
      snprintf(size, sizeof size, "%d%%", w->o.sample_pct);
    else
      snprintf(size, sizeof size, "%zu", w->o.sample);
    fprintf(out, " (--sample %s: %zu reaches skipped)", size,
            s->total - s->sampled);
  }
  fprintf(out, ", each transient and persistent: %zu runs", s->n);
  if (s->taken)
    fprintf(out, " (%zu more taken by its own faults: not armed again)",
            s->taken);
  fputc('\n', out);
}

/* The interrupted column only when a signal cut runs short. */
static int width(int o) {
  return o == 0 ? 21 : o == BS_SWEEP_INTERRUPTED ? 12 : 10;
}

static void print_matrix(FILE *out, const row *t, int ncols) {
  fprintf(out, "  %-18s %8s %6s", "point", "reaches", "swept");
  for (int o = 0; o < ncols; o++)
    fprintf(out, " %*s", width(o), bs_sweep_outcome_name(o));
  fputc('\n', out);
  for (int p = 0; p < BS_FP_COUNT; p++) {
    if (!t[p].reaches)
      continue;
    fprintf(out, "  %-18s %8zu %6zu", bs_fault_catalogue_get(p)->name,
            t[p].reaches, t[p].swept);
    for (int o = 0; o < ncols; o++)
      fprintf(out, " %*zu", width(o), t[p].out[o]);
    fputc('\n', out);
  }
}

/* Prints one scenario's matrix and its failures; counts outcomes. */
static void report_scenario(FILE *out, const bs_sweep_campaign *w,
                            const bs_swept *s, size_t *outcomes) {
  row t[BS_FP_COUNT];
  bool quiet = w->o.run.verbosity < 0 && bs_sweep_campaign_count_ok(s);
  if (!quiet)
    print_head(out, w, s);
  if (!bs_sweep_campaign_count_ok(s)) {
    outcomes[s->count.verdict == BS_INTERRUPTED ? BS_SWEEP_INTERRUPTED
                                                : BS_SWEEP_FAIL]++;
    return;
  }
  if (s->count.nreaches == 0)
    return;
  rows(w, s, t);
  if (!quiet)
    print_matrix(out, t,
                 bs_stop_signal() ? BS_SWEEP_OUTCOMES : BS_SWEEP_INTERRUPTED);
  for (size_t i = s->first; i < s->first + s->n; i++) {
    bs_sweep_outcome o = bs_sweep_judge(&w->res[i], s->fixed);
    outcomes[o]++;
    if (o == BS_SWEEP_FAIL || o == BS_SWEEP_VACUOUS)
      bs_report_table_line(out, &w->res[i], -1);
  }
}

/* ---- the JSON matrix ---- */

static void json_scenario(bs_buf *b, const bs_sweep_campaign *w,
                          const bs_swept *s) {
  row t[BS_FP_COUNT];
  rows(w, s, t);
  bs_json_write_field_str(b, "{", "scenario", s->base->scn->name);
  bs_buf_printf(b,
                ", \"ranks\": %d, \"cycles\": %d, \"counted\": %s, "
                "\"reaches\": %zu, \"swept\": %zu, \"skipped\": %zu, "
                "\"taken\": %zu, \"points\": [",
                s->base->ranks, s->base->cycles,
                bs_sweep_campaign_count_ok(s) ? "true" : "false", s->total,
                s->swept, s->total - s->sampled, s->taken);
  bool first = true;
  for (int p = 0; p < BS_FP_COUNT; p++) {
    if (!t[p].reaches)
      continue;
    bs_buf_printf(b, "%s{\"point\": ", first ? "" : ", ");
    bs_json_write_str(b, bs_fault_catalogue_get(p)->name);
    bs_buf_printf(b, ", \"reaches\": %zu, \"swept\": %zu", t[p].reaches,
                  t[p].swept);
    for (int o = 0; o < BS_SWEEP_OUTCOMES; o++)
      bs_buf_printf(b, ", \"%s\": %zu", bs_sweep_outcome_name(o), t[p].out[o]);
    bs_buf_printf(b, "}");
    first = false;
  }
  bs_buf_printf(b, "]}");
}

/* The runs the summary counts, scenario by scenario: a counting pass that
 * did not pass (cut short by a signal, or failed) stands for its
 * scenario's runs. Shallow copies, owned by the campaign. */
static bs_result *listed(const bs_sweep_campaign *w, size_t *n) {
  bs_result *all = calloc(w->n + w->plan.n + 1, sizeof *all);
  *n = 0;
  for (size_t i = 0; all && i < w->plan.n; i++) {
    const bs_swept *s = &w->sc[i];
    if (!bs_sweep_campaign_count_ok(s))
      all[(*n)++] = s->count;
    for (size_t k = s->first; k < s->first + s->n; k++)
      all[(*n)++] = w->res[k];
  }
  return all;
}

/* The JSON report's "sweep": a matrix per scenario. */
static void json_matrix(bs_buf *b, const void *arg) {
  const bs_sweep_campaign *w = arg;
  bs_buf_printf(b, "[");
  for (size_t i = 0; i < w->plan.n; i++) {
    bs_buf_printf(b, "%s\n    ", i ? "," : "");
    json_scenario(b, w, &w->sc[i]);
  }
  bs_buf_printf(b, "\n  ]");
}

static int save_reports(const bs_sweep_campaign *w) {
  size_t n = 0;
  bs_result *runs = listed(w, &n);
  if (!runs) {
    fprintf(stderr, "backstop sweep: out of memory writing the reports\n");
    return 1;
  }
  bs_cmd_reports reports = {.runs = runs,
                            .n = n,
                            .section = "sweep",
                            .section_json = json_matrix,
                            .arg = w};
  int rc =
      bs_cmd_save_reports("sweep", w->o.run.json, w->o.run.junit, &reports);
  free(runs);
  return rc;
}

static int report(const bs_sweep_campaign *w, FILE *out) {
  size_t outcomes[BS_SWEEP_OUTCOMES] = {0}, runs = 0, reaches = 0, swept = 0,
         taken = 0;
  for (size_t i = 0; i < w->plan.n; i++) {
    report_scenario(out, w, &w->sc[i], outcomes);
    reaches += w->sc[i].total;
    swept += w->sc[i].swept;
    taken += w->sc[i].taken;
  }
  for (int o = 0; o < BS_SWEEP_OUTCOMES; o++)
    runs += outcomes[o];
  fprintf(out,
          "\n%zu sweep runs: %zu contained-and-agreed, %zu recovered, "
          "%zu vacuous, %zu known, %zu fail",
          runs, outcomes[BS_SWEEP_CONTAINED], outcomes[BS_SWEEP_RECOVERED],
          outcomes[BS_SWEEP_VACUOUS], outcomes[BS_SWEEP_KNOWN],
          outcomes[BS_SWEEP_FAIL]);
  if (outcomes[BS_SWEEP_INTERRUPTED]) /* the JSON's and JUnit's count */
    fprintf(out, ", %zu interrupted", outcomes[BS_SWEEP_INTERRUPTED]);
  fputc('\n', out);
  /* What a sample covered, stated. */
  fprintf(out, "swept %zu of %zu reaches (%.1f%%)", swept, reaches,
          reaches ? 100.0 * (double)swept / (double)reaches : 100.0);
  if (taken)
    fprintf(out,
            "; %zu runs taken by the scenarios' own faults (not armed "
            "again)",
            taken);
  fputc('\n', out);
  if (outcomes[BS_SWEEP_KNOWN])
    fprintf(out,
            "known: the failures the configuration allows by design (%s); "
            "--strict fails them\n",
            w->o.strict ? "failing: --strict" : "not failing the exit status");
  /* A reach armed that never fired proves nothing: it fails the sweep. */
  if (outcomes[BS_SWEEP_VACUOUS])
    fprintf(out,
            "vacuous: %zu armed reach%s never fired (each a run to look "
            "at: its repro line above)\n",
            outcomes[BS_SWEEP_VACUOUS],
            outcomes[BS_SWEEP_VACUOUS] == 1 ? "" : "es");
  return (outcomes[BS_SWEEP_FAIL] + outcomes[BS_SWEEP_VACUOUS] > 0) |
         save_reports(w);
}

static bs_status check_sweepable(const bs_opts_run *o) {
  if (o->nsel == 0)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "name the scenario to sweep (backstop sweep SCENARIO)");
  if (o->rendezvous || o->repeat > 1)
    return bs_err_fail(BS_ERR_INVALID, NULL, "%s: not an option of sweep",
                       o->rendezvous ? "--rendezvous" : "--repeat");
#ifndef FIU_ENABLE
  return bs_err_fail(BS_ERR_INVALID, NULL,
                     "built without fault points (BS_FIU=OFF): nothing to "
                     "sweep");
#endif
  return BS_OK;
}

/* A sweep whose every counting pass ran clean but whose filters keep no
 * reach runs nothing: a usage error, as an empty selection is. */
static bool nothing_kept(const bs_sweep_campaign *w) {
  for (size_t i = 0; i < w->plan.n; i++)
    if (!bs_sweep_campaign_count_ok(&w->sc[i]))
      return false;
  if (w->n)
    return false;
  bs_err_fail(BS_ERR_INVALID, NULL, "the selection runs nothing: %s",
              w->o.npoints || w->o.rank >= 0 || w->o.cycle >= 0
                  ? "--point, --rank and --cycle keep no reach of it"
                  : "no fault point is reached in its runs");
  return true;
}

int bs_cmd_sweep(int argc, char **argv, const char *exe) {
  bs_sweep_campaign w = {0};
  int rc = 1;
  if (bs_opts_parse_sweep(argc, argv, &w.o) != BS_OK ||
      check_sweepable(&w.o.run) != BS_OK ||
      bs_plan_runs(&w.o.run, exe, &w.plan) != BS_OK)
    return bs_cmd_usage_error("sweep");
  w.batch = (bs_batch){.jobs = bs_plan_jobs(&w.o.run), .out = stderr};
  if (bs_sweep_campaign_plan(&w) != BS_OK)
    goto failed;
  if (nothing_kept(&w)) {
    bs_batch_end(&w.batch);
    bs_sweep_campaign_free(&w);
    return bs_cmd_usage_error("sweep");
  }
  if (bs_sweep_campaign_run(&w) != BS_OK)
    goto failed;
  bs_batch_end(&w.batch);
  rc = report(&w, stdout);
  goto out;
failed:
  bs_batch_end(&w.batch);
  fprintf(stderr, "backstop sweep: %s\n",
          bs_err()->message[0] ? bs_err()->message : "out of memory");
out:
  bs_sweep_campaign_free(&w);
  return rc;
}
