/* The catalogue commands: list, faults, explain, help. */
#include <stdio.h>
#include <string.h>

#include "bs_buf.h"
#include "bs_cmd.h"
#include "bs_fault.h"
#include "bs_mutant.h"
#include "bs_oracle.h"
#include "bs_scenario.h"

bool bs_cmd_json_flag(const char *cmd, int argc, char **argv, int *rc) {
  bool json = false;
  *rc = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) {
      json = true;
      continue;
    }
    fprintf(stderr, "backstop %s: unknown %s '%s' (see backstop help %s)\n",
            cmd, argv[i][0] == '-' ? "option" : "argument", argv[i], cmd);
    *rc = 2;
  }
  return json;
}

static void json_list(bs_buf *b, const char *const *items) {
  bs_buf_printf(b, "[");
  for (size_t i = 0; items && items[i]; i++) {
    bs_buf_printf(b, "%s", i ? ", " : "");
    bs_buf_json_str(b, items[i]);
  }
  bs_buf_printf(b, "]");
}

static void scenario_json(bs_buf *b, const bs_scenario *s) {
  bs_buf_printf(b, "{\"name\": ");
  bs_buf_json_str(b, s->name);
  bs_buf_printf(b, ", \"labels\": ");
  bs_buf_json_str(b, s->labels);
  bs_buf_printf(b, ", \"summary\": ");
  bs_buf_json_str(b, s->summary);
  bs_buf_printf(b, ", \"model\": ");
  bs_buf_json_str(b, s->model);
  bs_buf_printf(b,
                ", \"cycles\": %d, \"default_ranks\": %d, "
                "\"min_ranks\": %d, \"timeout_ms\": %d, \"sets\": ",
                s->cycles, s->default_ranks, s->min_ranks, s->timeout_ms);
  json_list(b, s->sets);
  bs_buf_printf(b, ", \"faults\": ");
  json_list(b, s->faults);
  bs_buf_printf(b, ", \"targets\": ");
  json_list(b, s->targets);
  bs_buf_printf(b, "}");
}

int bs_cmd_list(int argc, char **argv) {
  int rc;
  bool json = bs_cmd_json_flag("list", argc, argv, &rc);
  if (rc)
    return rc;
  if (json) {
    bs_buf b = {0};
    bs_buf_printf(&b, "{\"scenarios\": [");
    for (size_t i = 0; i < bs_scenario_count(); i++) {
      bs_buf_printf(&b, "%s\n  ", i ? "," : "");
      scenario_json(&b, bs_scenario_at(i));
    }
    bs_buf_printf(&b, "\n]}\n");
    fputs(bs_buf_str(&b), stdout);
    bs_buf_free(&b);
    return 0;
  }
  printf("%-30s %5s  %-34s %s\n", "scenario", "ranks", "labels", "summary");
  for (size_t i = 0; i < bs_scenario_count(); i++) {
    const bs_scenario *s = bs_scenario_at(i);
    printf("%-30s %5d  %-34s %s\n", s->name, s->default_ranks,
           s->labels ? s->labels : "", s->summary ? s->summary : "");
  }
  return 0;
}

int bs_cmd_faults(int argc, char **argv) {
  int rc;
  bool json = bs_cmd_json_flag("faults", argc, argv, &rc);
  if (rc)
    return rc;
  bs_buf b = {0};
  if (json)
    bs_buf_printf(&b, "{\"faults\": [");
  const bs_fault_point *p = bs_fault_catalogue();
  for (size_t i = 0; p[i].name; i++) {
    if (!json) {
      bs_buf_printf(&b, "%-18s %s\n%-18s failinfo: %s\n", p[i].name, p[i].where,
                    "", p[i].failinfo);
      continue;
    }
    bs_buf_printf(&b, "%s\n  {\"name\": ", i ? "," : "");
    bs_buf_json_str(&b, p[i].name);
    bs_buf_printf(&b, ", \"where\": ");
    bs_buf_json_str(&b, p[i].where);
    bs_buf_printf(&b, ", \"failinfo\": ");
    bs_buf_json_str(&b, p[i].failinfo);
    bs_buf_printf(&b, "}");
  }
  if (json)
    bs_buf_printf(&b, "\n]}\n");
  fputs(bs_buf_str(&b), stdout);
  bs_buf_free(&b);
  return 0;
}

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
