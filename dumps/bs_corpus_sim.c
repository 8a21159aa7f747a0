/* A corpus program run on simulated ranks (bs_corpus.h), through the
 * replay's machinery: each rank's ops up to where the program says it
 * stops (the op it waits in for ever included), on sub-communicators of
 * its groups, p2p pairs as one call of two ops, each numbered as torch
 * numbers them. The world ends once every rank is where the program says
 * it ends, its op recorded (none can move after). A collective whose
 * ranks issue other sizes, shapes, dtypes or ops than their peers' (a
 * fault, or a rank that ran ahead onto its peers' earlier op) is issued as
 * its lowest-ranked member issues it, the sim refusing any other, and its
 * entry then written as the rank issued it, as gloo (which compares
 * nothing) records it; a coalesced op is recorded as gloo records it, one
 * entry of every part. The dumps are the flight recorders as pickles,
 * their entries renumbered as PyTorch numbers them (no entry for a
 * group's making) and cut to the program's ring. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_corpus_int.h"
#include "bs_file.h"
#include "bs_pickle.h"
#include "bs_replay_int.h"
#include "bs_replay_procs.h"
#include "bs_vec.h"

typedef struct sim {
  const bs_corpus *c;
  bs_replay_state r;
  bs_dumps d;                   /* its groups, for the replay's ranks */
  const bs_corpus_op ***agreed; /* by group, by seq: what its ranks issue */
  size_t *nagreed;
  int done_ranks, waiting_ranks; /* where the program ends */
  bs_world *w;
} sim;

/* ---- the groups ---- */

static bs_status groups(sim *s) {
  const bs_corpus *c = s->c;
  size_t n = (size_t)c->ngroups + 1;
  s->d.groups = calloc(n, sizeof *s->d.groups);
  s->r.g = calloc(n, sizeof *s->r.g);
  s->r.start = calloc(n, sizeof *s->r.start);
  int *all = malloc((size_t)c->world * sizeof *all);
  if (!s->d.groups || !s->r.g || !s->r.start || !all) {
    free(all);
    return bs_err_fail(BS_ERR_NOMEM, NULL, "corpus: %zu groups", n);
  }
  for (int k = 0; k < c->world; k++)
    all[k] = k;
  s->d.groups[0] = (bs_dump_group){
      .name = "0", .desc = "default_pg", .ranks = all, .n = c->world};
  s->r.g[0] = (bs_replay_group){.world = true, .members = all, .n = c->world};
  for (int g = 1; g <= c->ngroups; g++) {
    const bs_corpus_group *x = &c->groups[g - 1];
    s->d.groups[g] = (bs_dump_group){
        .name = x->name, .desc = x->desc, .ranks = x->ranks, .n = x->n};
    s->r.g[g] = (bs_replay_group){.members = x->ranks, .n = x->n};
  }
  s->d.ngroups = n;
  s->d.ranks = c->world;
  return BS_OK;
}

/* What each collective's members issue: its lowest-ranked issuer's op. */
static bs_status agree(sim *s) {
  const bs_corpus *c = s->c;
  size_t ng = (size_t)c->ngroups + 1;
  if (!(s->agreed = calloc(ng, sizeof *s->agreed)) ||
      !(s->nagreed = calloc(ng, sizeof *s->nagreed)))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "corpus: groups");
  for (int r = 0; r < c->world; r++)
    for (size_t i = 0; i < c->st[r].n; i++) {
      const bs_corpus_issued *e = &c->st[r].e[i];
      int g = c->rank[r].op[e->op].g;
      if (e->p2p || e->seq < s->nagreed[g])
        continue;
      if (!bs_vec_grow(&s->agreed[g], NULL, e->seq + 1, sizeof *s->agreed[g]))
        return bs_err_fail(BS_ERR_NOMEM, NULL, "corpus: ops");
      for (size_t k = s->nagreed[g]; k <= e->seq; k++)
        s->agreed[g][k] = NULL;
      s->nagreed[g] = e->seq + 1;
      s->agreed[g][e->seq] = &c->rank[r].op[e->op];
    }
  return BS_OK;
}

/* ---- the plans ---- */

static bs_dtype dtype_of(int dt) {
  static const bs_dtype map[] = {BS_F32, BS_BF16, BS_I32, BS_I64};
  return (unsigned)dt < 4 ? map[dt] : BS_F32;
}

static bs_replay_step coll_step(const bs_corpus_op *o, int g, uint64_t seq) {
  static const char *const names[] = {"all_reduce", "all_gather", "broadcast",
                                      "barrier",    "all_to_all", "all_reduce"};
  bs_replay_op as = bs_replay_ops_coll(names[o->coll]);
  bs_replay_step st = {.group = g,
                       .seq = seq,
                       .op = as.op,
                       .dt = dtype_of(o->dt),
                       .count = o->coll == BS_CC_BARRIER ? 0 : o->n};
  st.orig = st.count;
  st.name = as.stand_in ? names[o->coll] : NULL;
  if (o->coll == BS_CC_ALL_TO_ALL)
    st.count = 0;
  return st;
}

static bs_status plan(sim *s, int r) {
  bs_status st = BS_OK;
  const bs_corpus *c = s->c;
  bs_replay_plan *p = &s->r.plan[r];
  size_t batch = 0;
  int op = -1;
  for (size_t i = 0; i < c->st[r].n; i++) {
    const bs_corpus_issued *e = &c->st[r].e[i];
    const bs_corpus_op *o = &c->rank[r].op[e->op];
    batch += e->op != op;
    op = e->op;
    bs_replay_step step =
        e->p2p ? (bs_replay_step){.group = o->g,
                                  .seq = e->seq,
                                  .op = e->send ? BS_COLL_SEND : BS_COLL_RECV,
                                  .dt = BS_F32,
                                  .count = o->n,
                                  .orig = o->n,
                                  .peer = e->peer,
                                  .batch = batch}
               : coll_step(s->agreed[o->g][e->seq], o->g, e->seq);
    BS_CHECK(bs_replay_plan_push(p, &step));
  }
out:
  return st;
}

/* ---- the end: every rank where the program ends ---- */

/* Entries a flight recorder's JSON holds, the groups' making left out. */
static size_t entries_in(const char *json) {
  size_t n = 0;
  for (const char *p = json; (p = strstr(p, "\"profiling_name\":\"")); p++)
    n += strncmp(p + 18, "nccl:comm_init", 14) != 0;
  return n;
}

/* Under r->mu: every rank through its plan or in its last op as the
 * program says, and each of those in it has recorded it (scheduled, every
 * rank waits where it stops: what it recorded it recorded). */
static bool settled(bs_replay_state *r, void *ctx) {
  sim *s = ctx;
  if (r->done != s->done_ranks || r->last != s->waiting_ranks || !s->w)
    return false;
  for (int k = 0; !r->sched && k < s->c->world; k++) {
    if (!s->c->st[k].waits)
      continue;
    char *j = bs_world_flight_json(s->w, k);
    bool in = j && entries_in(j) >= s->c->st[k].n;
    free(j);
    if (!in)
      return false;
  }
  return true;
}

static bs_status run(sim *s) {
  bs_status st = BS_OK, ran;
  bs_replay_rank_arg *ra = calloc((size_t)s->c->world, sizeof *ra);
  void **args = calloc((size_t)s->c->world, sizeof *args);
  /* Scheduled: one rank at a time on virtual time, the end known the
   * moment every rank waits (its quiet hook), not after a quiet time of
   * real threads; the schedule the program's own. */
  bs_world_opts wo = {.size = s->c->world,
                      .timeout_ms = 30000,
                      .fingerprint = true,
                      .flight_slots = (int)s->r.longest + 8,
                      .schedule = "random",
                      .schedule_seed = s->c->seed * 1000003u + s->c->index,
                      .quiet = bs_replay_stop_quiet,
                      .quiet_ctx = &s->r};
  pthread_t watch;
  if (!ra || !args)
    BS_FAIL(BS_ERR_NOMEM, NULL, "corpus: %d ranks", s->c->world);
  for (int k = 0; k < s->c->world; k++) {
    ra[k] = (bs_replay_rank_arg){.r = &s->r, .i = k};
    args[k] = &ra[k];
  }
  BS_CHECK(bs_world_create(&wo, &s->w));
  bs_replay_stop_sched(&s->r, s->w);
  BS_CHECK(bs_replay_stop_start(&s->r, &watch));
  ran = bs_world_run(s->w, NULL, bs_replay_rank_run, args);
  bs_replay_stop_end(&s->r, watch);
  bs_err_clear();
  if (!s->r.settled && ran != BS_OK)
    BS_FAIL(BS_ERR_INTERNAL, NULL,
            "corpus: seed %llu program %llu: the sim did not end where the "
            "program does (%s)",
            (unsigned long long)s->c->seed, (unsigned long long)s->c->index,
            bs_status_name(ran));
out:
  free(ra);
  free(args);
  return st;
}

/* ---- the dumps ---- */

static const char *torch_dtype(int dt) {
  static const char *const names[] = {"Float", "BFloat16", "Int", "Long"};
  return (unsigned)dt < 4 ? names[dt] : "Float";
}

static bs_json num(int64_t v) {
  return (bs_json){.type = BS_JNUM, .num = (double)v, .integral = true, .i = v};
}

/* [[a], [b]] of dims (one list of each tensor's). */
static bs_json tensors(const uint32_t (*dims)[2], const int *ndims, int n) {
  bs_json a = {.type = BS_JARR, .items = calloc((size_t)n, sizeof(bs_json))};
  for (int i = 0; a.items && i < n; i++) {
    bs_json *t = &a.items[a.n++];
    *t = (bs_json){.type = BS_JARR,
                   .items = calloc((size_t)ndims[i], sizeof(bs_json))};
    for (int k = 0; t->items && k < ndims[i]; k++)
      t->items[t->n++] = num(dims[i][k]);
  }
  return a;
}

static bs_json strs(const char *s, int n) {
  bs_json a = {.type = BS_JARR, .items = calloc((size_t)n, sizeof(bs_json))};
  for (int i = 0; a.items && i < n; i++)
    a.items[a.n++] = (bs_json){.type = BS_JSTR, .str = strdup(s)};
  return a;
}

static void set(bs_json *obj, const char *key, bs_json v) {
  for (size_t i = 0; i < obj->n; i++)
    if (!strcmp(obj->keys[i], key)) {
      bs_json_free(&obj->items[i]);
      obj->items[i] = v;
      return;
    }
  bs_json_free(&v);
}

/* Entry e written as op o of a world of `size` ranks issues it. */
static void rewrite(bs_json *e, const bs_corpus_op *o, int size) {
  uint32_t dims[3][2] = {{o->n, 0}};
  int nd[3] = {1}, n = 1;
  uint32_t out = o->coll == BS_CC_ALL_GATHER ? o->n * (uint32_t)size : o->n;
  char name[48];
  if (o->coll == BS_CC_ALL_TO_ALL)
    dims[0][0] = out = o->n * (uint32_t)size;
  if (o->cols > 1) {
    dims[0][0] = o->n / o->cols;
    dims[0][1] = o->cols;
    nd[0] = 2;
  }
  for (int i = 0; o->coll == BS_CC_COALESCED && i < o->nparts; i++, n = i) {
    dims[i][0] = o->parts[i];
    nd[i] = 1;
  }
  snprintf(name, sizeof name, "nccl:%s",
           o->coll == BS_CC_COALESCED ? "all_reduce"
                                      : bs_corpus_prog_coll(o->coll));
  set(e, "profiling_name", (bs_json){.type = BS_JSTR, .str = strdup(name)});
  if (o->coll == BS_CC_BARRIER)
    return;
  set(e, "input_sizes", tensors((const uint32_t(*)[2])dims, nd, n));
  if (n == 1 && nd[0] == 1)
    dims[0][0] = out;
  set(e, "output_sizes", tensors((const uint32_t(*)[2])dims, nd, n));
  set(e, "input_dtypes", strs(torch_dtype(o->dt), n));
  set(e, "output_dtypes", strs(torch_dtype(o->dt), n));
}

/* Rank r's op of group g numbered seq, when its entry must be rewritten:
 * it differs from what was issued, or gloo records it otherwise. */
static const bs_corpus_op *rewritten(const sim *s, int r, const char *g,
                                     int64_t seq) {
  const bs_corpus *c = s->c;
  for (size_t i = 0; i < c->st[r].n; i++) {
    const bs_corpus_issued *e = &c->st[r].e[i];
    const bs_corpus_op *o = &c->rank[r].op[e->op];
    if (e->p2p || (int64_t)e->seq != seq ||
        strcmp(bs_corpus_prog_name(c, o->g), g))
      continue;
    /* The sim recorded the agreed op's count and dtype, flat. */
    const bs_corpus_op *a = s->agreed[o->g][e->seq];
    bool same =
        a->coll == o->coll && a->n == o->n && a->dt == o->dt && o->cols <= 1;
    return same && o->coll != BS_CC_COALESCED && o->coll != BS_CC_ALL_TO_ALL
               ? NULL
               : o;
  }
  return NULL;
}

/* The entries as PyTorch writes them: no group's making, numbered from 0,
 * the ring's last fr_buffer, each as its rank issued it. */
static void edit(const sim *s, int r, bs_json *root) {
  bs_json *es = (bs_json *)bs_json_get(root, "entries");
  size_t k = 0, keep = s->c->fr_buffer ? (size_t)s->c->fr_buffer : 2000;
  for (size_t i = 0; es && es->type == BS_JARR && i < es->n; i++) {
    const char *name = bs_json_get_str(&es->items[i], "profiling_name", "");
    if (strstr(name, "comm_init")) {
      bs_json_free(&es->items[i]);
      continue;
    }
    es->items[k] = es->items[i];
    set(&es->items[k], "record_id", num((int64_t)k));
    const bs_json *pg = bs_json_get(&es->items[k], "process_group");
    const char *g = pg && pg->n ? pg->items[0].str : "0";
    const bs_corpus_op *o =
        rewritten(s, r, g ? g : "0",
                  bs_json_get_int(&es->items[k], "collective_seq_id", -1));
    if (o && !bs_json_get_bool(&es->items[k], "is_p2p", false))
      rewrite(&es->items[k], o, o->g ? s->c->groups[o->g - 1].n : s->c->world);
    k++;
  }
  size_t from = k > keep ? k - keep : 0;
  for (size_t i = 0; i < from; i++)
    bs_json_free(&es->items[i]);
  memmove(es->items, es->items + from, (k - from) * sizeof *es->items);
  es->n = k - from;
}

static bs_status write_dump(const sim *s, int r, const char *dir) {
  static const char *const tuples[] = {"process_group", NULL};
  bs_status st = BS_OK;
  char path[4096], *json = bs_world_flight_json(s->w, r);
  bs_json root = {0};
  bs_buf b = {0};
  const bs_corpus *c = s->c;
  if (!json)
    BS_FAIL(BS_ERR_NOMEM, NULL, "corpus: rank %d's dump", r);
  BS_CHECK(bs_json_parse(json, strlen(json), &root));
  edit(s, r, &root);
  bs_pickle_write(&b, &root, tuples);
  if (b.oom)
    BS_FAIL(BS_ERR_NOMEM, NULL, "corpus: rank %d's dump", r);
  if (c->nodes)
    snprintf(path, sizeof path, "%s/node%d", dir, r / (c->world / c->nodes));
  else
    snprintf(path, sizeof path, "%s", dir);
  BS_CHECK(bs_file_mkdir_p(path));
  snprintf(path + strlen(path), sizeof path - strlen(path), "/rank_%d", r);
  BS_CHECK(bs_file_publish(path, b.s, b.len));
out:
  free(json);
  bs_json_free(&root);
  bs_buf_free(&b);
  return st;
}

/* ---- the run ---- */

static bs_status prepare(sim *s) {
  bs_status st = BS_OK;
  const bs_corpus *c = s->c;
  if (!(s->r.plan = calloc((size_t)c->world, sizeof *s->r.plan)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "corpus: %d ranks", c->world);
  BS_CHECK(groups(s));
  BS_CHECK(agree(s));
  for (int r = 0; r < c->world; r++) {
    BS_CHECK(plan(s, r));
    s->r.longest =
        s->r.plan[r].n > s->r.longest ? s->r.plan[r].n : s->r.longest;
    s->waiting_ranks += c->st[r].waits;
  }
  s->done_ranks = c->world - s->waiting_ranks;
  bs_replay_plan_bytes(&s->r);
out:
  return st;
}

static void sim_free(sim *s) {
  for (int r = 0; s->r.plan && r < s->c->world; r++)
    free(s->r.plan[r].s);
  for (size_t g = 0; s->agreed && g < s->d.ngroups; g++)
    free(s->agreed[g]);
  if (s->d.groups)
    free(s->d.groups[0].ranks);
  free(s->agreed);
  free(s->nagreed);
  free(s->r.plan);
  free(s->r.g);
  free(s->r.start);
  free(s->d.groups);
  bs_world_destroy(s->w);
}

bs_status bs_corpus_sim_run(const bs_corpus *c, const char *dir) {
  bs_status st = BS_OK;
  sim s = {.c = c};
  pthread_condattr_t ca;
  s.r = (bs_replay_state){.d = &s.d,
                          .n = c->world,
                          .local = c->world,
                          .timeout_ms = 30000,
                          .exact = true,
                          .settle = settled,
                          .settle_ctx = &s};
  pthread_mutex_init(&s.r.mu, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s.r.cv, &ca);
  pthread_condattr_destroy(&ca);
  BS_CHECK(prepare(&s));
  BS_CHECK(run(&s));
  BS_CHECK(bs_file_mkdir_p(dir));
  for (int r = 0; r < c->world; r++)
    if (!c->rank[r].no_dump)
      BS_CHECK(write_dump(&s, r, dir));
out:
  sim_free(&s);
  pthread_cond_destroy(&s.r.cv);
  pthread_mutex_destroy(&s.r.mu);
  return st;
}
