/* A corpus program as JSON (schema "backstop-hang-program/1"): what
 * tests/fr_torch_prog.py runs under PyTorch. */
#include <stdio.h>
#include <string.h>

#include "bs_corpus_int.h"
#include "bs_json_write.h"

const char *bs_corpus_prog_name(const bs_corpus *c, int g) {
  return g ? c->groups[g - 1].name : "0";
}

const char *bs_corpus_prog_coll(int coll) {
  static const char *const names[] = {
      [BS_CC_ALL_REDUCE] = "all_reduce",
      [BS_CC_ALL_GATHER] = "all_gather",
      [BS_CC_BROADCAST] = "broadcast",
      [BS_CC_BARRIER] = "barrier",
      [BS_CC_ALL_TO_ALL] = "all_to_all",
      [BS_CC_COALESCED] = "all_reduce_coalesced",
  };
  return (unsigned)coll < sizeof names / sizeof names[0] ? names[coll] : "?";
}

static const char *dtype_name(int dt) {
  static const char *const names[] = {"float32", "bfloat16", "int32", "int64"};
  return (unsigned)dt < 4 ? names[dt] : "float32";
}

static void put_ints(bs_buf *b, const int *v, int n) {
  bs_buf_printf(b, "[");
  for (int i = 0; i < n; i++)
    bs_buf_printf(b, "%s%d", i ? ", " : "", v[i]);
  bs_buf_printf(b, "]");
}

static void put_peer(bs_buf *b, const char *key, int r) {
  if (r < 0)
    bs_buf_printf(b, ", \"%s\": null", key);
  else
    bs_buf_printf(b, ", \"%s\": %d", key, r);
}

static void put_op(bs_buf *b, const bs_corpus_op *o) {
  static const char *const kinds[] = {"", "send", "recv", "sendrecv"};
  bs_buf_printf(
      b, "{\"g\": %d, \"op\": \"%s\", \"n\": %u, \"dt\": \"%s\"", o->g,
      o->kind == BS_CK_COLL ? bs_corpus_prog_coll(o->coll) : kinds[o->kind],
      o->n, dtype_name(o->dt));
  if (o->cols > 1)
    bs_buf_printf(b, ", \"shape\": [%u, %u]", o->n / o->cols, o->cols);
  for (int i = 0;
       o->coll == BS_CC_COALESCED && o->kind == BS_CK_COLL && i < o->nparts;
       i++)
    bs_buf_printf(b, "%s%u%s", i ? ", " : ", \"parts\": [", o->parts[i],
                  i + 1 == o->nparts ? "]" : "");
  if (o->kind == BS_CK_SEND)
    bs_buf_printf(b, ", \"peer\": %d", o->to);
  if (o->kind == BS_CK_RECV)
    bs_buf_printf(b, ", \"peer\": %d", o->from);
  if (o->kind == BS_CK_PAIR) {
    put_peer(b, "to", o->to);
    put_peer(b, "from", o->from);
  }
  bs_buf_printf(b, "}");
}

static void put_make(bs_buf *b, const bs_corpus *c, const bs_corpus_maker *m) {
  if (m->how == BS_CM_MESH) {
    bs_buf_printf(b, "{\"how\": \"mesh\", \"shape\": ");
    put_ints(b, m->shape, m->ndims);
    bs_buf_printf(b, ", \"dims\": [");
    for (int d = 0; d < m->ndims; d++)
      bs_buf_printf(b, "%s\"%s\"", d ? ", " : "", m->dims[d]);
    bs_buf_printf(b, "]}");
  } else if (m->how == BS_CM_SUBGROUPS) {
    bs_buf_printf(b, "{\"how\": \"subgroups\", \"size\": %d}", m->size);
  } else {
    const bs_corpus_group *g = &c->groups[m->group];
    bs_buf_printf(b, "{\"how\": \"group\", \"ranks\": ");
    put_ints(b, g->ranks, g->n);
    bs_buf_printf(b, ", \"desc\": ");
    bs_json_write_str(b, strcmp(g->desc, "undefined") ? g->desc : NULL);
    bs_buf_printf(b, "}");
  }
}

static bool has_p2p(const bs_corpus *c) {
  for (int r = 0; r < c->world; r++)
    for (size_t i = 0; i < c->rank[r].n; i++)
      if (c->rank[r].op[i].kind != BS_CK_COLL)
        return true;
  return false;
}

static void put_layout(bs_buf *b, const bs_corpus *c) {
  bs_buf_printf(b, ", \"no_dump\": [");
  for (int r = 0, first = 1; r < c->world; r++)
    if (c->rank[r].no_dump &&
        (!c->nodes || r / (c->world / c->nodes) != c->missing_node)) {
      bs_buf_printf(b, "%s%d", first ? "" : ", ", r);
      first = 0;
    }
  bs_buf_printf(b, "]");
  if (!c->nodes)
    return;
  bs_buf_printf(b, ", \"nodes\": [");
  for (int k = 0, per = c->world / c->nodes; k < c->nodes; k++) {
    bs_buf_printf(b, "%s[", k ? ", " : "");
    for (int r = k * per; r < (k + 1) * per; r++)
      bs_buf_printf(b, "%s%d", r > k * per ? ", " : "", r);
    bs_buf_printf(b, "]");
  }
  bs_buf_printf(b, "], \"missing_nodes\": [%d]", c->missing_node);
}

bs_status bs_corpus_prog_json(const bs_corpus *c, bs_buf *b) {
  bs_buf_printf(b,
                "{\"schema\": \"backstop-hang-program/1\", \"name\": "
                "\"s%llu-p%llu\", \"seed\": %llu, \"index\": %llu, "
                "\"world\": %d, \"fr_buffer\": %d, \"p2p\": %s, \"fault\": ",
                (unsigned long long)c->seed, (unsigned long long)c->index,
                (unsigned long long)c->seed, (unsigned long long)c->index,
                c->world, c->fr_buffer ? c->fr_buffer : 2000,
                has_p2p(c) ? "true" : "false");
  bs_json_write_str(b, c->what);
  put_layout(b, c);
  bs_buf_printf(b, ",\n \"groups\": [");
  for (int g = 0; g < c->ngroups; g++) {
    bs_buf_printf(b, "%s\n  {\"name\": \"%s\", \"desc\": ", g ? "," : "",
                  c->groups[g].name);
    bs_json_write_str(b, c->groups[g].desc);
    bs_buf_printf(b, ", \"ranks\": ");
    put_ints(b, c->groups[g].ranks, c->groups[g].n);
    bs_buf_printf(b, "}");
  }
  bs_buf_printf(b, "],\n \"make\": [");
  for (int m = 0; m < c->nmake; m++) {
    bs_buf_printf(b, "%s", m ? ", " : "");
    put_make(b, c, &c->make[m]);
  }
  bs_buf_printf(b, "],\n \"ranks\": [");
  for (int r = 0; r < c->world; r++) {
    bs_buf_printf(b, "%s\n  {\"ops\": [", r ? "," : "");
    for (size_t i = 0; i < bs_corpus_exec_limit(c, r); i++) {
      bs_buf_printf(b, "%s", i ? ", " : "");
      put_op(b, &c->rank[r].op[i]);
    }
    bs_buf_printf(b, "]}");
  }
  bs_buf_printf(b, "]}\n");
  return b->oom ? bs_err_fail(BS_ERR_NOMEM, NULL, "corpus: program") : BS_OK;
}
