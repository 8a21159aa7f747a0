/* backstop explain: what a scenario does, arms, checks and expects. */
#include <stdio.h>
#include <string.h>

#include "bs_cmd.h"
#include "bs_fault.h"
#include "bs_mutant.h"
#include "catalog/bs_scenario.h"
#include "oracles/bs_oracle.h"

static void print_list(const char *title, const char *const *items) {
  printf("%s:", title);
  if (!items || !items[0])
    printf(" none");
  for (size_t i = 0; items && items[i]; i++)
    printf("\n  %s", items[i]);
  printf("\n");
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
            "backstop explain: unknown scenario '%s' (see backstop "
            "list)\n",
            argv[1]);
    return 2;
  }
  printf("%s — %s\n\n%s\n\n", s->name, s->summary ? s->summary : "",
         s->details ? s->details : "");
  printf("labels: %s\nmodel: %s, %d cycle%s, %d ranks by default (at least "
         "%d)\ndriver: %s\n",
         s->labels ? s->labels : "", s->model, s->cycles,
         s->cycles == 1 ? "" : "s", s->default_ranks, s->min_ranks,
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
  print_list("faults armed ({last} = the last rank)", s->faults);
  print_list("mutants it targets", s->targets);
  printf("oracles checked:\n");
  for (const bs_oracle *o = bs_oracles(); o->name; o++)
    printf("  %-17s %s\n", o->name, o->what);
  if (s->expect)
    printf("  %-17s %s (skipped when --fault adds faults)\n", "expectation",
           s->expects ? s->expects : "the scenario's own check");
  return 0;
}
