/* backstop list: the scenario catalogue. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bs_buf.h"
#include "bs_cmd.h"
#include "bs_json_write.h"
#include "catalog/bs_scenario.h"
#include "plan/bs_plan.h"

static void scenario_json(bs_buf *b, const bs_scenario *s) {
  bs_json_write_field_str(b, "{", "name", s->name);
  bs_json_write_field_str(b, ", ", "labels", s->labels);
  bs_json_write_field_str(b, ", ", "summary", s->summary);
  bs_json_write_field_str(b, ", ", "model", s->model);
  bs_buf_printf(b,
                ", \"cycles\": %d, \"min_cycles\": %d, \"default_ranks\": %d, "
                "\"min_ranks\": %d, \"timeout_ms\": %d, \"sets\": ",
                s->cycles, bs_plan_min_cycles(s), s->default_ranks,
                s->min_ranks, s->timeout_ms);
  bs_json_write_strs(b, s->sets, SIZE_MAX);
  bs_buf_printf(b, ", \"faults\": ");
  bs_json_write_strs(b, s->faults, SIZE_MAX);
  bs_buf_printf(b, ", \"targets\": ");
  bs_json_write_strs(b, s->targets, SIZE_MAX);
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
