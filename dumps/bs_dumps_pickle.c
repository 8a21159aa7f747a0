/* A Backstop dump (the flight recorder's JSON) as the pickle PyTorch would
 * have written: what torchfrtrace reads. Its analyzer refuses an op it does
 * not know, so Backstop's own entries, a communicator's (re-)creation
 * (nccl:comm_init), stay in the JSON copy only. */
#include <stdlib.h>
#include <string.h>

#include "bs_dumps.h"
#include "bs_pickle.h"

static bool torch_knows(const bs_json *e) {
  const char *name = bs_json_get_str(e, "profiling_name", "");
  return strcmp(bs_dumps_op_name(name), "comm_init") != 0;
}

/* Drops the entries PyTorch's analyzer does not know, in place. */
static void keep_torch_entries(bs_json *root) {
  bs_json *es = (bs_json *)bs_json_get(root, "entries");
  size_t k = 0;
  for (size_t i = 0; es && es->type == BS_JARR && i < es->n; i++) {
    if (torch_knows(&es->items[i]))
      es->items[k++] = es->items[i];
    else
      bs_json_free(&es->items[i]);
  }
  if (es && es->type == BS_JARR)
    es->n = k;
}

bs_status bs_dumps_pickle(const char *json, bs_buf *out) {
  static const char *const tuples[] = {"process_group", NULL};
  bs_status st = BS_OK;
  bs_json root = {0};
  BS_CHECK(bs_json_parse(json, strlen(json), &root));
  keep_torch_entries(&root);
  bs_pickle_write(out, &root, tuples);
  if (out->oom)
    BS_FAIL(BS_ERR_NOMEM, NULL, "pickle of a dump: out of memory");
out:
  bs_json_free(&root);
  return st;
}
