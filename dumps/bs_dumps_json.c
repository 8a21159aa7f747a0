/* The verdict as JSON (bs_dumps_json.h). Only the groups it names are
 * described (a job of thousands of ranks has thousands of groups). */
#include "bs_dumps_json.h"

#include <stdlib.h>
#include <string.h>

#include "bs_buf.h"
#include "bs_dumps_graph.h"
#include "bs_json_write.h"

static const char *verdict_name(bs_dumps_finding f) {
  return f == BS_DUMPS_DESYNC ? "desync"
         : f == BS_DUMPS_HANG ? "hang"
                              : "clean";
}

static void put_ints(bs_buf *b, const int *v, int n) {
  bs_buf_printf(b, "[");
  for (int i = 0; i < n; i++)
    bs_buf_printf(b, "%s%d", i ? ", " : "", v[i]);
  bs_buf_printf(b, "]");
}

/* {"group": "3", "desc": "undefined", "op": 2, "p2p": false, "op_name":
 * "all_reduce"} */
static void put_ref(const bs_dumps_graph *g, bs_dumps_ref at, bs_buf *b) {
  const bs_dump_group *grp;
  if (at.group < 0) {
    bs_buf_printf(b, "null");
    return;
  }
  grp = &g->d->groups[at.group];
  char what[320];
  bs_dumps_graph_describe(g, at, what, sizeof what);
  what[strcspn(what, " ")] = '\0';
  bs_buf_printf(b, "{\"group\": ");
  bs_json_write_str(b, grp->name);
  bs_buf_printf(b, ", \"desc\": ");
  bs_json_write_str(b, grp->desc);
  bs_buf_printf(b, ", \"op\": %llu, \"p2p\": %s, \"op_name\": ",
                (unsigned long long)at.seq, at.p2p ? "true" : "false");
  bs_json_write_str(b, what);
  bs_buf_printf(b, "}");
}

static void put_held(const bs_dumps_graph *g, const bs_dumps_root *r,
                     bs_buf *b) {
  bs_buf_printf(b, "[");
  for (int i = 0; i < r->nheld; i++) {
    bs_buf_printf(b, "%s", i ? ", " : "");
    put_ref(g, r->held[i], b);
  }
  bs_buf_printf(b, "]");
}

static void put_root(const bs_dumps_graph *g, const bs_dumps_root *r,
                     bs_buf *b) {
  const bs_dump_group *grp = &g->d->groups[r->at.group];
  bs_buf_printf(b, "{\"rank\": %d, \"kind\": \"%s\", \"group\": ", r->rank,
                bs_dumps_graph_kind_name(r->kind));
  bs_json_write_str(b, grp->name);
  bs_buf_printf(b, ", \"desc\": ");
  bs_json_write_str(b, grp->desc);
  bs_buf_printf(b, ", \"op\": %llu, \"p2p\": %s, \"at\": ",
                (unsigned long long)r->at.seq, r->at.p2p ? "true" : "false");
  put_ref(g, r->at, b);
  bs_buf_printf(b, ", \"mismatch\": ");
  bs_json_write_str(b, r->kind == BS_ROOT_MISMATCH
                           ? bs_dumps_finding_mismatch_name(r->mismatch)
                           : NULL);
  bs_buf_printf(b, ", \"went_on\": ");
  put_ref(g, r->kind == BS_ROOT_SKIPPED ? r->went : (bs_dumps_ref){.group = -1},
          b);
  bs_buf_printf(b, ", \"waits_in\": ");
  put_ref(g, r->waits ? r->now : (bs_dumps_ref){.group = -1}, b);
  if (r->kind == BS_ROOT_STALLED)
    bs_buf_printf(b, ", \"last\": %llu", (unsigned long long)r->last);
  else
    bs_buf_printf(b, ", \"last\": null");
  bs_buf_printf(b, ", \"order_known\": %s, \"held\": ",
                r->order_known ? "true" : "false");
  put_held(g, r, b);
  bs_buf_printf(b, ", \"frame\": ");
  bs_json_write_str(b, r->frame[0] ? r->frame : NULL);
  bs_buf_printf(b, "}");
}

static void put_waits_for(const bs_dumps_graph *g, const bs_dumps_node *n,
                          bs_buf *b) {
  bs_buf_printf(b, "[");
  for (int i = 0; i < n->nmissing; i++) {
    int m = n->missing[i];
    bool root = g->rootix[m] >= 0;
    bs_buf_printf(b, "%s{\"rank\": %d, \"root\": %s, \"in\": ", i ? ", " : "",
                  m, root ? "true" : "false");
    put_ref(g,
            !root && g->in[m] >= 0 ? g->node[g->in[m]].at
                                   : (bs_dumps_ref){.group = -1},
            b);
    bs_buf_printf(b, "}");
  }
  bs_buf_printf(b, "]");
}

static void put_node(const bs_dumps_graph *g, size_t k, bool *pick, bs_buf *b) {
  const bs_dumps_node *n = &g->node[k];
  bs_buf_printf(b, "{\"at\": ");
  put_ref(g, n->at, b);
  bs_buf_printf(b, ", \"matched\": %s, \"desync\": %s, \"waiting\": ",
                n->matched ? "true" : "false", n->desync ? "true" : "false");
  put_ints(b, n->waiting, n->nwaiting);
  bs_buf_printf(b, ", \"waits_for\": ");
  put_waits_for(g, n, b);
  memset(pick, 0, ((size_t)g->d->ranks + 1) * sizeof *pick);
  bs_dumps_graph_reach(g, (int)k, pick);
  bs_buf_printf(b, ", \"roots\": [");
  for (int r = 0, first = 1; r < g->d->ranks; r++)
    if (pick[r]) {
      bs_buf_printf(b, "%s%d", first ? "" : ", ", r);
      first = 0;
    }
  bs_buf_printf(b, "], \"cycle\": %d}", n->scc);
}

static void put_cycles(const bs_dumps_graph *g, bs_buf *b) {
  bs_buf_printf(b, "[");
  for (size_t c = 0; c < g->ncycles; c++) {
    const bs_dumps_cycle *cy = &g->cycle[c];
    bs_buf_printf(b, "%s{\"order_deadlock\": %s, \"ops\": [", c ? ", " : "",
                  g->nroots ? "false" : "true");
    for (int i = 0; i < cy->n; i++) {
      const bs_dumps_node *n = &g->node[cy->nodes[i]];
      bs_buf_printf(b, "%s{\"at\": ", i ? ", " : "");
      put_ref(g, n->at, b);
      bs_buf_printf(b, ", \"issued_first_by\": ");
      put_ints(b, n->waiting, n->nwaiting);
      bs_buf_printf(b, "}");
    }
    bs_buf_printf(b, "]}");
  }
  bs_buf_printf(b, "]");
}

static void put_head(const bs_dumps_graph *g, bs_buf *b) {
  const bs_dumps *d = g->d;
  bs_buf_printf(b,
                "{\"schema\": \"%s\", \"verdict\": \"%s\", \"ranks\": %d, "
                "\"dumps\": %zu, \"version\": ",
                BS_DUMPS_JSON_SCHEMA, verdict_name(g->finding), d->ranks, d->n);
  bs_json_write_str(b, d->version);
  bs_buf_printf(b, ", \"comm_lib\": ");
  bs_json_write_str(b, d->lib);
}

char *bs_dumps_json_of(const bs_dumps_graph *g) {
  bs_buf b = {0};
  bool *pick = calloc((size_t)g->d->ranks + 1, sizeof *pick);
  if (!pick)
    return NULL;
  put_head(g, &b);
  bs_buf_printf(&b, ",\n \"roots\": [");
  for (size_t k = 0; k < g->nroots; k++) {
    bs_buf_printf(&b, "%s\n  ", k ? "," : "");
    put_root(g, &g->root[k], &b);
  }
  bs_buf_printf(&b, "],\n \"stuck\": [");
  for (size_t k = 0; k < g->nnodes; k++) {
    bs_buf_printf(&b, "%s\n  ", k ? "," : "");
    put_node(g, k, pick, &b);
  }
  bs_buf_printf(&b, "],\n \"cycles\": ");
  put_cycles(g, &b);
  bs_buf_printf(&b, ",\n \"unknown\": ");
  bs_json_write_strs(&b, (const char *const *)g->unknown, g->nunknown);
  bs_buf_printf(&b, "}\n");
  free(pick);
  return bs_buf_take(&b);
}
