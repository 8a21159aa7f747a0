/* The wait-for graph (bs_dumps_graph.h): every group judged on its own
 * (its first mismatch, the collective it is stuck at, its members' p2p
 * waits), those stuck ops made nodes with who waits in them and whom they
 * wait for, each rank placed in the earliest it waits in; then the roots
 * (bs_dumps_roots.c) and the cycles (bs_dumps_cycles.c). */
#include "bs_dumps_graph.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_buf.h"
#include "bs_dumps_cycles.h"
#include "bs_dumps_roots.h"
#include "bs_dumps_unnamed.h"
#include "bs_vec.h"

const char *bs_dumps_graph_kind_name(bs_dumps_root_kind k) {
  static const char *const names[] = {
      [BS_ROOT_STALLED] = "stalled",   [BS_ROOT_SKIPPED] = "skipped",
      [BS_ROOT_NO_DUMP] = "no_dump",   [BS_ROOT_UNREADABLE] = "unreadable",
      [BS_ROOT_MISMATCH] = "mismatch",
  };
  return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

static bool push_int(int **v, int *n, int x) {
  if (!bs_vec_grow(v, NULL, (size_t)*n + 1, sizeof **v))
    return false;
  (*v)[(*n)++] = x;
  return true;
}

static bs_dumps_node *new_node(bs_dumps_graph *g, bs_dumps_ref at) {
  if (!bs_vec_grow(&g->node, &g->capnodes, g->nnodes + 1, sizeof *g->node))
    return NULL;
  bs_dumps_node *k = &g->node[g->nnodes++];
  *k = (bs_dumps_node){
      .at = at, .waiter = -1, .scc = -1, .closed_by = -1, .idle = -1};
  return k;
}

/* ---- the groups' stuck collectives ---- */

/* Member i of view v is missing from collective #s: it left no dump, or
 * its last collective of the group is before s. */
static bool missing_from(const bs_dumps_graph *g, const bs_dumps_view *v, int i,
                         uint64_t s) {
  return !v->dump[i] || bs_dumps_order_last(g->order, v->members[i], v->g) < s;
}

/* dumpless: only the groups whose hang is their members without a dump
 * (bs_dumps_gres.dumpless), else only the others. */
static bs_status coll_node(bs_dumps_graph *g, int k, bool dumpless) {
  const bs_dumps_gres *r = &g->gres[k];
  const bs_dumps_view *v = &g->view[k];
  bool desync = r->finding == BS_DUMPS_DESYNC;
  if ((r->finding != BS_DUMPS_HANG || r->p2p || r->dumpless != dumpless) &&
      !desync)
    return BS_OK;
  bs_dumps_node *n = new_node(g, (bs_dumps_ref){.group = k, .seq = r->seq});
  bool ok = n != NULL;
  for (int i = 0; ok && i < v->n; i++) {
    const bs_dump_coll *c =
        r->waiting[i] ? bs_dumps_pg_find(v->pg[i], r->seq) : NULL;
    n->c = n->c ? n->c : c;
    if (r->waiting[i])
      ok = push_int(&n->waiting, &n->nwaiting, v->members[i]);
    else if (missing_from(g, v, i, r->seq))
      ok = push_int(&n->missing, &n->nmissing, v->members[i]);
  }
  if (!ok)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "analyze: stuck ops");
  n->desync = desync;
  n->matched = n->nmissing == 0;
  return BS_OK;
}

/* By rank: missing from one of the stuck ops so far (NULL: no memory). */
static bool *blamed(const bs_dumps_graph *g) {
  bool *b = calloc((size_t)g->d->ranks + 1, sizeof *b);
  for (size_t k = 0; b && k < g->nnodes; k++)
    for (int i = 0; i < g->node[k].nmissing; i++)
      b[g->node[k].missing[i]] = true;
  return b;
}

/* Whether a member of group k's hang of members without a dump waits
 * in it: its dump retires ops when issued (not shown done), and every
 * member without a dump is missing from another stuck op already (a rank
 * that finished its program looks the same: no root is made for it). */
static bool may_wait(const bs_dumps_graph *g, int k, const bool *was) {
  const bs_dumps_gres *r = &g->gres[k];
  const bs_dumps_view *v = &g->view[k];
  bool waits = false;
  for (int i = 0; r->dumpless && i < v->n; i++)
    waits |= r->waiting[i] && v->dump[i] && v->dump[i]->retires_at_issue;
  for (int i = 0; waits && i < v->n; i++)
    if (!v->dump[i] && !was[v->members[i]])
      return false;
  return waits;
}

/* Each member's first p2p op not done: a node of its own. */
static bs_status p2p_nodes(bs_dumps_graph *g, int k) {
  bs_status st = BS_OK;
  const bs_dumps_view *v = &g->view[k];
  bs_dumps_p2p_wait *w = calloc(v->n > 0 ? (size_t)v->n : 1, sizeof *w);
  if (!w)
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: p2p of %d ranks", v->n);
  BS_CHECK(bs_dumps_p2p_waits(v, w));
  for (int i = 0; i < v->n; i++) {
    if (!w[i].op)
      continue;
    bs_dumps_ref at = {.group = k, .seq = w[i].op->seq, .p2p = true};
    bs_dumps_node *n = new_node(g, at);
    int peer = w[i].op->peer;
    if (!n || !push_int(&n->waiting, &n->nwaiting, v->members[i]) ||
        (!w[i].matched && peer >= 0 &&
         !push_int(&n->missing, &n->nmissing, peer)))
      BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: stuck ops");
    n->c = w[i].op;
    n->waiter = v->members[i];
    n->matched = w[i].matched;
  }
out:
  free(w);
  return st;
}

/* ---- where each rank waits ---- */

/* The rid of rank r's entry of node k (UINT64_MAX: none). */
static uint64_t rid_in(const bs_dumps_graph *g, size_t k, int r) {
  const bs_dumps_node *n = &g->node[k];
  uint64_t rid = UINT64_MAX;
  if (n->at.p2p)
    return n->c->rid;
  return bs_dumps_order_rid(g->order, r, n->at, &rid) ? rid : UINT64_MAX;
}

static bs_status place(bs_dumps_graph *g) {
  uint64_t *best = malloc(((size_t)g->d->ranks + 1) * sizeof *best);
  if (!best)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "analyze: %d ranks", g->d->ranks);
  for (int r = 0; r < g->d->ranks; r++)
    best[r] = UINT64_MAX;
  for (size_t k = 0; k < g->nnodes; k++)
    for (int i = 0; i < g->node[k].nwaiting; i++) {
      int r = g->node[k].waiting[i];
      uint64_t rid = rid_in(g, k, r);
      if (g->in[r] < 0 || rid < best[r]) {
        g->in[r] = (int)k;
        best[r] = rid;
      }
    }
  free(best);
  return BS_OK;
}

/* A matched op waits for the members in it that wait in an earlier op. */
static bs_status held_elsewhere(bs_dumps_graph *g) {
  for (size_t k = 0; k < g->nnodes; k++) {
    bs_dumps_node *n = &g->node[k];
    if (!n->matched || n->desync)
      continue;
    for (int i = 0; i < n->nwaiting; i++)
      if (g->in[n->waiting[i]] != (int)k &&
          !push_int(&n->missing, &n->nmissing, n->waiting[i]))
        return bs_err_fail(BS_ERR_NOMEM, NULL, "analyze: stuck ops");
  }
  return BS_OK;
}

/* ---- what cannot be known ---- */

static __attribute__((format(printf, 2, 3))) void note(bs_dumps_graph *g,
                                                       const char *fmt, ...) {
  char *line = NULL;
  va_list ap;
  va_start(ap, fmt);
  int k = vasprintf(&line, fmt, ap);
  va_end(ap);
  if (k < 0)
    return;
  if (!bs_vec_grow(&g->unknown, &g->capunknown, g->nunknown + 1,
                   sizeof *g->unknown)) {
    free(line);
    return;
  }
  g->unknown[g->nunknown++] = line;
}

/* Node n's waiting ranks as text (NULL: no memory). */
static char *ranks_in(const bs_dumps_graph *g, const bs_dumps_node *n) {
  bool *in = calloc((size_t)g->d->ranks + 1, sizeof *in);
  for (int i = 0; in && i < n->nwaiting; i++)
    in[n->waiting[i]] = true;
  char *who = in ? bs_report_block_ranks(in, g->d->ranks) : NULL;
  free(in);
  return who;
}

/* Why an unnamed op is on a cycle: every choice makes it, or (closed_by)
 * every rank waits and the op that waits for exactly its ranks is taken
 * as where its member is. */
static void cycle_why(const bs_dumps_graph *g, const bs_dumps_node *n,
                      char *buf, size_t len) {
  buf[0] = '\0';
  if (n->closed_by >= 0) {
    const bs_dumps_node *by = &g->node[n->closed_by];
    char at[256];
    char *who = ranks_in(g, by);
    bs_dumps_graph_describe(g, by->at, at, sizeof at);
    snprintf(buf, len,
             "; every rank waits, and %s waits for exactly its ranks: taken "
             "as waiting for %s in turn (two groups of the same ranks)",
             at, who ? who : "?");
    free(who);
  } else if (n->idle >= 0) {
    snprintf(buf, len,
             "; rank %d is the one it may be that waits in no stuck op "
             "(or left no dump), and it is missing from another already: "
             "taken as that member",
             n->idle);
  } else if (n->scc >= 0) {
    snprintf(buf, len,
             "; whichever it is, the waits make the cycle through it");
  }
}

/* An op that waits for a member the dumps do not name (bs_dumps_unnamed.h). */
static void unnamed_note(bs_dumps_graph *g, const bs_dumps_node *n) {
  char at[256], why[512];
  char *who = ranks_in(g, n);
  bs_dumps_graph_describe(g, n->at, at, sizeof at);
  cycle_why(g, n, why, sizeof why);
  note(g,
       "%s waits with every member the dumps name in it (%s): no pg_config "
       "lists its group's members, so the one it waits for is not known (it "
       "may be %s%s)%s",
       at, who ? who : "?", n->may_be ? n->may_be : "another rank",
       n->matched ? ", or none: stuck inside it" : "", why);
  free(who);
}

static void unknowns(bs_dumps_graph *g) {
  const bs_dumps *d = g->d;
  size_t lost = 0;
  bs_buf names = {0};
  for (size_t k = 0; k < g->nnodes; k++)
    if (g->node[k].unnamed)
      unnamed_note(g, &g->node[k]);
  size_t inferred = 0;
  for (size_t k = 0; k < d->ngroups; k++)
    if (!d->groups[k].ranks_known && g->gres[k].finding != BS_DUMPS_CLEAN &&
        inferred++ < 8)
      bs_buf_printf(&names, "%s%s", names.len ? ", " : "", d->groups[k].name);
  if (inferred)
    note(g,
         "no pg_config lists the members of process group%s %s%s: they are "
         "read from the entries (and the order torch makes groups in): a "
         "member with no entry of one may be missing from them",
         inferred > 1 ? "s" : "", bs_buf_str(&names),
         inferred > 8 ? " and more" : "");
  bs_buf_free(&names);
  for (size_t i = 0; i < d->n; i++)
    lost += d->d[i].lost > 0;
  if (lost)
    note(g,
         "%zu rank%s' rings forgot their oldest entries (the first record_id "
         "held is past 0): what they issued before is not known",
         lost, lost == 1 ? "" : "s");
  int *quiet = malloc(((size_t)d->ranks + 1) * sizeof *quiet), nq = 0;
  for (int r = 0; quiet && r < d->ranks; r++)
    if (!bs_dumps_rank(d, r) && g->rootix[r] < 0)
      quiet[nq++] = r;
  if (nq) {
    bool *pick = calloc((size_t)d->ranks + 1, sizeof *pick);
    for (int i = 0; pick && i < nq; i++)
      pick[quiet[i]] = true;
    char *who = pick ? bs_report_block_ranks(pick, d->ranks) : NULL;
    note(g,
         "%s left no dump, and no stuck op the dumps show waits for %s: "
         "what %s did after the ops %s peers completed with %s is not known",
         who ? who : "some ranks", nq == 1 ? "it" : "them",
         nq == 1 ? "it" : "they", nq == 1 ? "its" : "their",
         nq == 1 ? "it" : "them");
    free(who);
    free(pick);
  }
  free(quiet);
  for (size_t k = 0; k < g->nnodes; k++)
    if (g->node[k].at.p2p && !g->node[k].matched && !g->node[k].nmissing)
      note(g,
           "rank %d waits to receive from any rank: whom it waits for is "
           "not known",
           g->node[k].waiter);
}

/* ---- the graph ---- */

static bs_status judge_all(bs_dumps_graph *g) {
  bs_status st = BS_OK;
  const bs_dumps *d = g->d;
  for (size_t k = 0; k < d->ngroups; k++) {
    BS_CHECK(bs_dumps_judge_view_make(d, (int)k, &g->view[k]));
    BS_CHECK(bs_dumps_judge(&g->view[k], &g->gres[k]));
  }
out:
  return st;
}

static bs_dumps_finding finding_of(const bs_dumps_graph *g) {
  bs_dumps_finding f = BS_DUMPS_CLEAN;
  for (size_t k = 0; k < g->d->ngroups; k++) {
    if (g->gres[k].finding == BS_DUMPS_DESYNC)
      return BS_DUMPS_DESYNC;
    if (g->gres[k].finding == BS_DUMPS_HANG)
      f = BS_DUMPS_HANG;
  }
  return g->nnodes && f == BS_DUMPS_CLEAN ? BS_DUMPS_HANG : f;
}

bs_status bs_dumps_graph_build(const bs_dumps *d, bs_dumps_graph *g) {
  bs_status st = BS_OK;
  bool *was = NULL; /* by rank: missing from a stuck op */
  size_t ng = d->ngroups ? d->ngroups : 1, nr = (size_t)d->ranks + 1;
  memset(g, 0, sizeof *g);
  g->d = d;
  g->view = calloc(ng, sizeof *g->view);
  g->gres = calloc(ng, sizeof *g->gres);
  g->in = malloc(nr * sizeof *g->in);
  g->rootix = malloc(nr * sizeof *g->rootix);
  if (!g->view || !g->gres || !g->in || !g->rootix)
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: %d ranks", d->ranks);
  for (size_t r = 0; r < nr; r++)
    g->in[r] = g->rootix[r] = -1;
  BS_CHECK(bs_dumps_order_make(d, &g->order));
  BS_CHECK(judge_all(g));
  for (size_t k = 0; k < d->ngroups; k++) {
    BS_CHECK(coll_node(g, (int)k, false));
    if (g->gres[k].finding != BS_DUMPS_DESYNC)
      BS_CHECK(p2p_nodes(g, (int)k));
  }
  /* Members without a dump in groups whose every other op is done hold
   * nothing the dumps show, unless nothing else is stuck: then they are
   * what the job waits for (never an all-clear); or unless a member's
   * last op is there, its dump retires ops when issued and they are
   * missing elsewhere: it waits in it, for them. */
  size_t before = g->nnodes;
  if (!(was = blamed(g)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: %d ranks", d->ranks);
  for (size_t k = 0; k < d->ngroups; k++)
    if (!before || may_wait(g, (int)k, was))
      BS_CHECK(coll_node(g, (int)k, true));
  BS_CHECK(place(g));
  BS_CHECK(held_elsewhere(g));
  free(was);
  if (!(was = blamed(g)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: %d ranks", d->ranks);
  BS_CHECK(bs_dumps_unnamed_close(g, was));
  BS_CHECK(bs_dumps_roots_find(g));
  BS_CHECK(bs_dumps_cycles_find(g));
  BS_CHECK(bs_dumps_unnamed_find(g));
  g->finding = finding_of(g);
  unknowns(g);
out:
  free(was);
  if (st != BS_OK)
    bs_dumps_graph_free(g);
  return st;
}

void bs_dumps_graph_free(bs_dumps_graph *g) {
  for (size_t k = 0; g->view && k < g->d->ngroups; k++) {
    bs_dumps_judge_gres_free(&g->gres[k]);
    bs_dumps_judge_view_free(&g->view[k]);
  }
  for (size_t k = 0; k < g->nnodes; k++) {
    free(g->node[k].waiting);
    free(g->node[k].missing);
    free(g->node[k].may_be);
  }
  for (size_t k = 0; k < g->nroots; k++) {
    free(g->root[k].held);
    free(g->root[k].held_kind);
    free(g->root[k].held_went);
  }
  for (size_t k = 0; k < g->ncycles; k++)
    free(g->cycle[k].nodes);
  for (size_t k = 0; k < g->nunknown; k++)
    free(g->unknown[k]);
  free(g->view);
  free(g->gres);
  free(g->node);
  free(g->root);
  free(g->cycle);
  free(g->unknown);
  free(g->in);
  free(g->rootix);
  bs_dumps_order_free(g->order);
  memset(g, 0, sizeof *g);
}

const bs_dumps_root *bs_dumps_graph_root_of(const bs_dumps_graph *g, int r) {
  int k = r >= 0 && r < g->d->ranks ? g->rootix[r] : -1;
  return k >= 0 ? &g->root[k] : NULL;
}

/* Depth first from node k, each node once (seen). */
static int reach_from(const bs_dumps_graph *g, int k, bool *seen, bool *pick) {
  int found = 0;
  if (seen[k])
    return 0;
  seen[k] = true;
  const bs_dumps_node *n = &g->node[k];
  for (int i = 0; i < n->nmissing; i++) {
    int m = n->missing[i];
    if (g->rootix[m] >= 0)
      found += !pick[m] && (pick[m] = true);
    else if (g->in[m] >= 0)
      found += reach_from(g, g->in[m], seen, pick);
  }
  return found;
}

int bs_dumps_graph_reach(const bs_dumps_graph *g, int k, bool *pick) {
  bool *seen = calloc(g->nnodes + 1, sizeof *seen);
  int found = seen ? reach_from(g, k, seen, pick) : 0;
  free(seen);
  return found;
}

/* An entry of op `at` from any member's dump (NULL: none holds it). */
static const bs_dump_coll *entry_of(const bs_dumps_graph *g, bs_dumps_ref at) {
  const bs_dump_group *grp = &g->d->groups[at.group];
  for (int i = 0; i < grp->n; i++) {
    const bs_dump_pg *p =
        bs_dumps_pg_of(bs_dumps_rank(g->d, grp->ranks[i]), at.group);
    const bs_dump_coll *c = at.p2p ? NULL : bs_dumps_pg_find(p, at.seq);
    if (c)
      return c;
  }
  return NULL;
}

void bs_dumps_graph_describe(const bs_dumps_graph *g, bs_dumps_ref at,
                             char *buf, size_t n) {
  const bs_dump_group *grp = &g->d->groups[at.group];
  const bs_dump_coll *c = entry_of(g, at);
  snprintf(buf, n, "%s #%llu of process group %s%s%s%s",
           at.p2p ? "p2p"
           : c    ? c->op
                  : "collective",
           (unsigned long long)at.seq, grp->name, grp->desc[0] ? " (" : "",
           grp->desc, grp->desc[0] ? ")" : "");
}
