/* backstop explain: what a scenario does, arms, checks and expects. The
 * scenario's own words are its summary, details and expects; the lines on
 * its faults, mutants and oracles come from the catalogues, so they cannot
 * drift from what runs. */
#include <stdio.h>
#include <string.h>

#include "bs_cmd.h"
#include "bs_fault_control.h"
#include "bs_fault_parse.h"
#include "bs_mutant.h"
#include "catalog/bs_scenario.h"
#include "oracles/bs_oracle.h"
#include "plan/bs_plan.h"

static void print_list(const char *title, const char *const *items) {
  printf("%s:", title);
  if (!items || !items[0])
    printf(" none");
  for (size_t i = 0; items && items[i]; i++)
    printf("\n  %s", items[i]);
  printf("\n");
}

/* The statuses a firing of f explains ("explained" oracle). */
static void print_explains(const bs_fault_point *f) {
  printf("    explains:");
  for (const bs_status *st = f->explains; *st != BS_OK; st++)
    printf("%s %s", st == f->explains ? "" : ",", bs_status_name(*st));
  printf("\n");
}

/* Every catalogue point the spec's name matches (a trailing '*': several),
 * with where it fires, what its firing explains and, when the spec sets
 * failinfo, what that means. */
static void print_fault(const char *spec, int ranks) {
  char expanded[256];
  bs_fault_spec p;
  printf("  %s\n", spec);
  bs_scenario_fault_expand(spec, ranks, expanded, sizeof expanded);
  if (bs_fault_spec_parse(expanded, &p) != BS_OK) {
    printf("    (%s)\n", bs_err()->message);
    bs_err_clear();
    return;
  }
  for (int i = 0; i < BS_FP_COUNT; i++) {
    const bs_fault_point *f = bs_fault_catalogue_get(i);
    if (!bs_fault_spec_matches(p.name, f->name))
      continue;
    printf("    %s: %s\n", f->name, f->where);
    print_explains(f);
    if (strstr(spec, "failinfo="))
      printf("    failinfo: %s\n", f->failinfo);
  }
}

static void print_faults(const bs_scenario *s) {
  printf("faults armed ({last} = the last rank):");
  if (!s->faults || !s->faults[0])
    printf(" none");
  printf("\n");
  for (const char *const *f = s->faults; f && *f; f++)
    print_fault(*f, s->default_ranks);
}

static void print_targets(const bs_scenario *s) {
  printf("mutants it targets:");
  if (!s->targets || !s->targets[0])
    printf(" none");
  printf("\n");
  for (const char *const *t = s->targets; t && *t; t++) {
    int m = bs_mutant_parse(*t);
    if (m < 0)
      printf("  %s (not a known mutant)\n", *t);
    else
      printf("  %s (%s): %s\n", *t, bs_mutant_origin((bs_mutant)m),
             bs_mutant_effect((bs_mutant)m));
  }
  printf("the mutants it catches: backstop mutants %s; by which oracles: "
         "backstop run %s --mutant NAME\n",
         s->name, s->name);
}

static void print_oracles(const bs_scenario *s) {
  printf("oracles checked:\n");
  for (const bs_oracle *o = bs_oracle_list(); o->name; o++)
    printf("  %-17s %s\n", o->name, o->what);
  if (s->expect)
    printf("  %-17s %s (skipped when --fault adds faults)\n", "expectation",
           s->expects ? s->expects : "the scenario's own check");
}

int bs_cmd_explain(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr,
            "backstop explain: expected one scenario name, got %d "
            "arguments\n",
            argc - 1);
    return 2;
  }
  const bs_scenario *s = bs_scenario_find(argv[1]);
  if (!s) {
    fprintf(stderr,
            "backstop explain: unknown scenario '%s'%s (see backstop "
            "list)\n",
            argv[1], bs_scenario_near(argv[1]));
    return 2;
  }
  printf("%s — %s\n\n%s\n\n", s->name, s->summary ? s->summary : "",
         s->details ? s->details : "");
  printf("labels: %s\nmodel: %s, %d cycle%s (at least %d), %d rank%s by "
         "default (at least %d)\ndriver: %s\n",
         s->labels ? s->labels : "", s->model, s->cycles,
         s->cycles == 1 ? "" : "s", bs_plan_min_cycles(s), s->default_ranks,
         s->default_ranks == 1 ? "" : "s", s->min_ranks,
         s->drive ? "its own"
                  : "the standard lifecycle (init; per cycle "
                    "update_weights, wake_up, restore, "
                    "train_step, sleep)");
  if (s->timeout_ms > 0)
    printf("watchdog timeout: %d ms unless --timeout-ms is given\n",
           s->timeout_ms);
  if (s->inspect)
    printf("after the run: its own inspection records extra checks\n");
  print_list("configuration (--set)", s->sets);
  print_faults(s);
  print_targets(s);
  print_oracles(s);
  return 0;
}
