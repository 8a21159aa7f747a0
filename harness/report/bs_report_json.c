#include "report/bs_report.h"

#include <stdlib.h>
#include <string.h>

#include "bs_json_write.h"

static void kills_json(bs_buf *b, const bs_kill *kills, size_t n) {
  bs_buf_printf(b, ",\n  \"mutants\": [");
  for (size_t i = 0; i < n; i++) {
    bs_buf_printf(b, "%s\n    {\"name\": ", i ? "," : "");
    bs_json_write_str(b, kills[i].name);
    bs_buf_printf(b, ", \"killed_by\": [");
    for (size_t k = 0; k < kills[i].nkilled; k++) {
      bs_buf_printf(b, "%s", k ? ", " : "");
      bs_json_write_str(b, kills[i].killed_by[k]);
    }
    bs_buf_printf(b, "], \"survived\": %s",
                  kills[i].survived ? "true" : "false");
    if (kills[i].interrupted)
      bs_buf_printf(b, ", \"interrupted\": true");
    if (kills[i].untested) {
      bs_json_write_field_str(b, ", ", "untested", kills[i].untested);
    }
    bs_buf_printf(b, "}");
  }
  bs_buf_printf(b, "%s]", n ? "\n  " : "");
}

void bs_report_json(bs_buf *b, const bs_result *runs, size_t n,
                    const bs_kill *kills, size_t nkills) {
  bs_summary s = bs_report_summarize(runs, n);
  bs_buf_printf(b, "{\n  \"schema\": 1,\n  \"version\": ");
  bs_json_write_str(b, BS_VERSION);
  bs_buf_printf(b, ",\n  \"runs\": [");
  for (size_t i = 0; i < n; i++) {
    bs_buf_printf(b, "%s\n", i ? "," : "");
    bs_result_json(b, &runs[i], 4);
  }
  bs_buf_printf(b,
                "%s],\n  \"summary\": {\"runs\": %zu, \"pass\": %zu, "
                "\"fail\": %zu, \"vacuous\": %zu, \"hang\": %zu, "
                "\"crash\": %zu, \"interrupted\": %zu, \"known\": %zu}",
                n ? "\n  " : "", s.runs, s.pass, s.fail, s.vacuous, s.hang,
                s.crash, s.interrupted, s.known);
  if (kills)
    kills_json(b, kills, nkills);
  bs_buf_printf(b, "\n}\n");
}

void bs_report_json_add(bs_buf *b, const char *key, const char *json) {
  static const char end[] = "\n}\n";
  size_t n = sizeof end - 1;
  if (b->oom || b->len < n || strcmp(b->s + b->len - n, end) != 0)
    return;
  b->len -= n;
  b->s[b->len] = '\0';
  bs_buf_printf(b, ",\n  ");
  bs_json_write_str(b, key);
  bs_buf_printf(b, ": %s\n}\n", json);
}
