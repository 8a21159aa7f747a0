/* backstop faults: the fault-point catalogue (faults/bs_fault_points.def). */
#include <stdio.h>

#include "bs_buf.h"
#include "bs_cmd.h"
#include "bs_fault_control.h"
#include "bs_json_write.h"

static void print_text(bs_buf *b, const bs_fault_point *p) {
  bs_buf_printf(b, "%-18s %s\n%-18s failinfo: %s\n", p->name, p->where, "",
                p->failinfo);
}

static void print_json(bs_buf *b, const bs_fault_point *p) {
  const char *const fields[][2] = {
      {"name", p->name}, {"where", p->where}, {"failinfo", p->failinfo}};
  bs_buf_printf(b, "%s\n  {", p->id ? "," : "");
  for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
    bs_buf_printf(b, "%s\"%s\": ", i ? ", " : "", fields[i][0]);
    bs_json_write_str(b, fields[i][1]);
  }
  bs_buf_printf(b, ", \"explains\": [");
  for (const bs_status *s = p->explains; *s != BS_OK; s++) {
    bs_buf_printf(b, "%s", s == p->explains ? "" : ", ");
    bs_json_write_str(b, bs_status_name(*s));
  }
  bs_buf_printf(b, "]}");
}

int bs_cmd_faults(int argc, char **argv) {
  int rc;
  bool json = bs_cmd_json_flag("faults", argc, argv, &rc);
  if (rc)
    return rc;
  bs_buf b = {0};
  if (json)
    bs_buf_printf(&b, "{\"faults\": [");
  for (int i = 0; i < BS_FP_COUNT; i++)
    (json ? print_json : print_text)(&b, bs_fault_catalogue_get(i));
  if (json)
    bs_buf_printf(&b, "\n]}\n");
  fputs(bs_buf_str(&b), stdout);
  bs_buf_free(&b);
  return 0;
}
