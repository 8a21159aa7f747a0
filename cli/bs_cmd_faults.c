/* backstop faults: the fault-point catalogue. */
#include <stdio.h>
#include <string.h>

#include "bs_cmd.h"
#include "bs_fault.h"
#include "util/bs_buf.h"

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
