/* A corpus program drawn from its seed (bs_corpus.h): the mesh, its
 * groups in torch's order, each step's ops per rank, then the fault. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_corpus_int.h"
#include "bs_vec.h"

/* ---- drawing ---- */

typedef struct rng {
  uint64_t s;
} rng;

static uint64_t next(rng *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* In [0, n). */
static int below(rng *r, int n) {
  return n > 0 ? (int)(next(r) % (uint64_t)n) : 0;
}

static bool chance(rng *r, int percent) {
  return below(r, 100) < percent;
}

/* ---- the mesh ---- */

enum { PP = 0, DP, CP, EP, TP, NDIMS };
static const char *const dim_names[NDIMS] = {"pp", "dp", "cp", "ep", "tp"};

typedef struct mesh {
  int size[NDIMS];
  int *of[NDIMS]; /* by rank: the group index of its slice of the dim */
} mesh;

/* World sizes log-uniform in [lo, hi]: TP, PP, CP, EP of small powers of
 * two, DP the rest. */
static void draw_mesh(rng *r, int lo, int hi, mesh *m) {
  double want =
      exp(log(lo) + (log(hi) - log(lo)) * (double)below(r, 1000000) / 1e6);
  static const int tp[] = {1, 2, 2, 4, 8}, pp[] = {1, 1, 2, 4},
                   cp[] = {1, 1, 1, 2}, ep[] = {1, 1, 2, 4};
  for (;;) {
    m->size[TP] = tp[below(r, 5)];
    m->size[PP] = pp[below(r, 4)];
    m->size[CP] = cp[below(r, 4)];
    m->size[EP] = ep[below(r, 4)];
    int part = m->size[TP] * m->size[PP] * m->size[CP] * m->size[EP];
    int dp = (int)(want / part + 0.5);
    int active = 0;
    m->size[DP] = dp < 1 ? 1 : dp;
    for (int d = 0; d < NDIMS; d++)
      active += m->size[d] > 1;
    int world = part * m->size[DP];
    if (world >= lo && world <= hi && active >= 2)
      return;
  }
}

static int world_of(const mesh *m) {
  int w = 1;
  for (int d = 0; d < NDIMS; d++)
    w *= m->size[d];
  return w;
}

/* ---- groups ---- */

static int add_group(bs_corpus *c, const int *ranks, int n, const char *desc,
                     int dim) {
  if (!bs_vec_grow(&c->groups, NULL, (size_t)c->ngroups + 1, sizeof *c->groups))
    return -1;
  bs_corpus_group *g = &c->groups[c->ngroups];
  *g = (bs_corpus_group){.n = n, .dim = dim};
  if (!(g->ranks = malloc((size_t)n * sizeof *g->ranks)))
    return -1;
  memcpy(g->ranks, ranks, (size_t)n * sizeof *ranks);
  snprintf(g->name, sizeof g->name, "%d", c->ngroups + 1);
  snprintf(g->desc, sizeof g->desc, "%s", desc);
  return ++c->ngroups;
}

static bool add_make(bs_corpus *c, bs_corpus_maker mk) {
  if (!bs_vec_grow(&c->make, NULL, (size_t)c->nmake + 1, sizeof *c->make))
    return false;
  c->make[c->nmake++] = mk;
  return true;
}

/* The ranks of dim d's slice through coordinates co (row-major over the
 * dims whose size is above 1, pp outermost). */
static void slice_of(const mesh *m, int d, int *co, int *out) {
  for (int i = 0; i < m->size[d]; i++) {
    co[d] = i;
    int r = 0;
    for (int k = 0; k < NDIMS; k++)
      r = r * m->size[k] + co[k];
    out[i] = r;
  }
}

/* Dim d's groups, the other coordinates in row-major order (as
 * init_device_mesh and a loop of new_group over them make them). */
static bool dim_groups(bs_corpus *c, mesh *m, int d, const char *desc) {
  int world = world_of(m), co[NDIMS] = {0}, ranks[512];
  if (!(m->of[d] = calloc((size_t)world, sizeof *m->of[d])))
    return false;
  for (int flat = 0; flat < world / m->size[d]; flat++) {
    int rest = flat;
    for (int k = NDIMS - 1; k >= 0; k--)
      if (k != d) {
        co[k] = rest % m->size[k];
        rest /= m->size[k];
      }
    slice_of(m, d, co, ranks);
    int g = add_group(c, ranks, m->size[d], desc, d);
    if (g < 0)
      return false;
    for (int i = 0; i < m->size[d]; i++)
      m->of[d][ranks[i]] = g;
  }
  return true;
}

/* The groups, by one of three styles: a DeviceMesh; tp by new_subgroups
 * and the others by new_group loops; new_group loops throughout. */
static bool make_groups(bs_corpus *c, rng *r, mesh *m) {
  int style = below(r, 3);
  bs_corpus_maker mesh_make = {.how = BS_CM_MESH};
  for (int d = 0; d < NDIMS; d++)
    if (m->size[d] > 1 && style == 0) {
      mesh_make.shape[mesh_make.ndims] = m->size[d];
      snprintf(mesh_make.dims[mesh_make.ndims++], 8, "%s", dim_names[d]);
    }
  if (style == 0 && !add_make(c, mesh_make))
    return false;
  for (int d = 0; d < NDIMS; d++) {
    if (m->size[d] < 2)
      continue;
    char desc[24];
    bool sub = style == 1 && d == TP;
    snprintf(desc, sizeof desc, "%s%s", style == 0 ? "mesh_" : "",
             style == 0 ? dim_names[d] : "undefined");
    int first = c->ngroups;
    if (!dim_groups(c, m, d, desc))
      return false;
    for (int k = first; style != 0 && !sub && k < c->ngroups; k++)
      if (!add_make(c, (bs_corpus_maker){.how = BS_CM_GROUP, .group = k}))
        return false;
    if (sub && !add_make(c, (bs_corpus_maker){.how = BS_CM_SUBGROUPS,
                                              .size = m->size[d]}))
      return false;
  }
  return true;
}

/* ---- ops ---- */

static bool push(bs_corpus_rank *rk, bs_corpus_op op) {
  if (!bs_vec_grow(&rk->op, &rk->cap, rk->n + 1, sizeof *rk->op))
    return false;
  rk->op[rk->n++] = op;
  return true;
}

static bs_corpus_op coll(int g, int kind, uint32_t n, int dt) {
  return (bs_corpus_op){.g = g,
                        .kind = BS_CK_COLL,
                        .coll = (uint8_t)kind,
                        .n = n,
                        .dt = (uint8_t)dt,
                        .to = -1,
                        .from = -1};
}

static bs_corpus_op p2p(int g, int kind, uint32_t n, int to, int from) {
  return (bs_corpus_op){
      .g = g, .kind = (uint8_t)kind, .n = n, .to = to, .from = from};
}

/* What each step issues, the same on every rank (its sizes drawn once). */
typedef struct plan {
  int layers;       /* tp all_reduces a step */
  uint32_t tp_n[3]; /* their sizes */
  bool a2a, coalesced, barrier, world, gpipe;
  int mbs; /* pipeline microbatches */
  uint32_t dp_parts[3];
  int steps;
  int extra_a, extra_b; /* two groups of one dp slice's ranks (0: none) */
} plan;

static void draw_plan(rng *r, plan *p, bool small_tp) {
  p->layers = 1 + below(r, 3);
  for (int i = 0; i < 3; i++)
    p->tp_n[i] = small_tp ? 4 : (uint32_t)(4 << below(r, 3));
  p->a2a = true;
  p->coalesced = chance(r, 40);
  p->barrier = chance(r, 30);
  p->world = chance(r, 70);
  p->gpipe = chance(r, 40);
  p->mbs = 2 + below(r, 3);
  for (int i = 0; i < 3; i++)
    p->dp_parts[i] = (uint32_t)(2 + below(r, 6));
  p->steps = 2 + below(r, 3);
}

/* Stage s's exchanges in Megatron's 1F1B (pairs, -1 where there is no
 * peer), or all forwards then all backwards (gpipe: blocking ops). */
static bool pipeline(bs_corpus_rank *rk, const bs_corpus *c, int g, int s,
                     const plan *p) {
  const bs_corpus_group *grp = &c->groups[g - 1];
  int stages = grp->n, prev = s > 0 ? grp->ranks[s - 1] : -1;
  int nxt = s < stages - 1 ? grp->ranks[s + 1] : -1;
  bool ok = true;
  if (p->gpipe) {
    for (int m = 0; m < p->mbs && ok; m++)
      ok = (prev < 0 || push(rk, p2p(g, BS_CK_RECV, 8, -1, prev))) &&
           (nxt < 0 || push(rk, p2p(g, BS_CK_SEND, 8, nxt, -1)));
    for (int m = 0; m < p->mbs && ok; m++)
      ok = (nxt < 0 || push(rk, p2p(g, BS_CK_RECV, 8, -1, nxt))) &&
           (prev < 0 || push(rk, p2p(g, BS_CK_SEND, 8, prev, -1)));
    return ok;
  }
  int warm = stages - s - 1 < p->mbs ? stages - s - 1 : p->mbs;
  int rest = p->mbs - warm;
  int seq[64][2], k = 0;
  for (int i = 0; i < warm; i++) {
    seq[k][0] = -1, seq[k++][1] = prev;
    seq[k][0] = nxt, seq[k++][1] = -1;
  }
  if (rest)
    seq[k][0] = -1, seq[k++][1] = prev;
  for (int i = 0; i < rest; i++) {
    seq[k][0] = nxt, seq[k++][1] = nxt;
    seq[k][0] = prev, seq[k++][1] = i == rest - 1 ? -1 : prev;
  }
  for (int i = 0; i < warm; i++) {
    seq[k][0] = -1, seq[k++][1] = nxt;
    seq[k][0] = prev, seq[k++][1] = -1;
  }
  for (int i = 0; i < k && ok; i++)
    if (seq[i][0] >= 0 || seq[i][1] >= 0)
      ok = push(rk, p2p(g, BS_CK_PAIR, 8, seq[i][0], seq[i][1]));
  return ok;
}

/* Rank r's group rank in group g. */
static int rank_in(const bs_corpus *c, int g, int r) {
  const bs_corpus_group *grp = &c->groups[g - 1];
  for (int i = 0; i < grp->n; i++)
    if (grp->ranks[i] == r)
      return i;
  return -1;
}

static bool step(bs_corpus *c, const mesh *m, const plan *p, int r) {
  bs_corpus_rank *rk = &c->rank[r];
  bool ok = true;
  for (int l = 0; m->size[TP] > 1 && l < p->layers && ok; l++)
    ok = push(rk, coll(m->of[TP][r], BS_CC_ALL_REDUCE, p->tp_n[l], BS_CD_F32));
  if (m->size[CP] > 1 && ok) {
    int g = m->of[CP][r], i = rank_in(c, g, r), n = m->size[CP];
    const int *ring = c->groups[g - 1].ranks;
    ok = push(rk,
              p2p(g, BS_CK_PAIR, 4, ring[(i + 1) % n], ring[(i + n - 1) % n]));
  }
  if (m->size[EP] > 1 && p->a2a && ok)
    ok = push(rk, coll(m->of[EP][r], BS_CC_ALL_TO_ALL, 2, BS_CD_F32));
  if (m->size[PP] > 1 && ok)
    ok = pipeline(rk, c, m->of[PP][r], rank_in(c, m->of[PP][r], r), p);
  if (m->size[DP] > 1 && ok) {
    bs_corpus_op op = coll(m->of[DP][r], BS_CC_ALL_REDUCE, 16, BS_CD_F32);
    if (p->coalesced) {
      op.coll = BS_CC_COALESCED;
      op.nparts = 2 + (p->dp_parts[2] & 1);
      op.n = 0;
      for (int i = 0; i < op.nparts; i++)
        op.n += op.parts[i] = p->dp_parts[i];
    }
    ok = push(rk, op);
  }
  if (p->extra_a && ok && rank_in(c, p->extra_a, r) >= 0)
    ok = push(rk, coll(p->extra_a, BS_CC_ALL_REDUCE, 4, BS_CD_F32)) &&
         push(rk, coll(p->extra_b, BS_CC_ALL_REDUCE, 2, BS_CD_F32));
  if (p->barrier && ok)
    ok = push(rk, coll(0, BS_CC_BARRIER, 0, BS_CD_F32));
  if (p->world && ok)
    ok = push(rk, coll(0, BS_CC_ALL_REDUCE, 1, BS_CD_F32));
  return ok;
}

/* ---- faults ---- */

static bool is_coll(const bs_corpus_op *o) {
  return o->kind == BS_CK_COLL;
}

/* A rank and an op of its program, drawn past its first step; -1 where
 * none fits (the program is drawn again). */
static int draw_op(rng *r, const bs_corpus *c, int rank, const plan *p,
                   bool colls_only) {
  const bs_corpus_rank *rk = &c->rank[rank];
  int per = (int)rk->n / p->steps, from = per > 0 ? per / 2 : 0;
  for (int tries = 0; tries < 64 && from < (int)rk->n; tries++) {
    int i = from + below(r, (int)rk->n - from);
    if (!colls_only || (is_coll(&rk->op[i]) && rk->op[i].coll != BS_CC_BARRIER))
      return i;
  }
  return -1;
}

static void stall(bs_corpus *c, int rank, int at, bool dump) {
  c->rank[rank].stalls = true;
  c->rank[rank].stop = (size_t)at;
  c->rank[rank].no_dump = !dump;
  c->fault[c->nfaults++] = (bs_corpus_flaw){.what = BS_CF_STALL, .rank = rank};
}

static void skip(bs_corpus *c, int rank, int at) {
  bs_corpus_rank *rk = &c->rank[rank];
  memmove(&rk->op[at], &rk->op[at + 1],
          (rk->n - (size_t)at - 1) * sizeof *rk->op);
  rk->n--;
  c->fault[c->nfaults++] = (bs_corpus_flaw){.what = BS_CF_SKIP, .rank = rank};
}

/* A size, shape, dtype or op of its own at op `at` of rank `rank` (a
 * shape of as many elements, a dtype of as many bytes); its name. */
static const char *mismatch(bs_corpus *c, rng *r, int rank, int at) {
  static const char *const names[] = {"size", "shape", "dtype", "op",
                                      "dtype of as many elements"};
  static const int kinds[] = {3, 4, 2, 1}; /* bs_dumps_mismatch */
  bs_corpus_op *o = &c->rank[rank].op[at];
  const char *name = NULL;
  int kind = below(r, 4);
  if (o->coll == BS_CC_COALESCED)
    kind = 0;
  if (kind == 1 && (o->n < 4 || o->n % 2))
    kind = 2;
  if (kind == 0) {
    o->n += 1;
    if (o->coll == BS_CC_COALESCED)
      o->parts[0] += 1;
  } else if (kind == 1) {
    o->cols = 2;
  } else if (kind == 2 && chance(r, 50)) { /* 2 x bf16 for 1 x fp32 */
    o->dt = BS_CD_BF16;
    o->n *= 2;
  } else if (kind == 2) { /* int32 for fp32: gloo's chunks stay alike */
    o->dt = BS_CD_I32;
    name = names[4];
  } else {
    o->coll = o->coll == BS_CC_ALL_GATHER ? BS_CC_ALL_REDUCE : BS_CC_ALL_GATHER;
  }
  c->fault[c->nfaults++] = (bs_corpus_flaw){
      .what = BS_CF_MISMATCH, .rank = rank, .mismatch = kinds[kind]};
  return name ? name : names[kind];
}

/* Ops a and b of each rank of `who` swapped at step k (their places in
 * the step's template are the same on every rank of who). */
static void swap(bs_corpus *c, const int *who, int n, int a, int b) {
  for (int i = 0; i < n; i++) {
    bs_corpus_rank *rk = &c->rank[who[i]];
    bs_corpus_op t = rk->op[a];
    rk->op[a] = rk->op[b];
    rk->op[b] = t;
    if (c->nfaults < BS_CORPUS_MAX_ROOTS)
      c->fault[c->nfaults++] =
          (bs_corpus_flaw){.what = BS_CF_SWAP, .rank = who[i]};
  }
}

/* Two adjacent collectives of different groups in rank 0's program, past
 * its first step: a; -1: none. */
static int swappable(rng *r, const bs_corpus *c, int rank, const plan *p) {
  const bs_corpus_rank *rk = &c->rank[rank];
  for (int tries = 0; tries < 64; tries++) {
    int a = draw_op(r, c, rank, p, true);
    if (a >= 0 && (size_t)a + 1 < rk->n && is_coll(&rk->op[a + 1]) &&
        rk->op[a + 1].g != rk->op[a].g && rk->op[a + 1].coll != BS_CC_BARRIER)
      return a;
  }
  return -1;
}

static void say(bs_corpus *c, const char *fmt, int rank, int at) {
  const bs_corpus_op *o =
      at >= 0 && (size_t)at < c->rank[rank].n ? &c->rank[rank].op[at] : NULL;
  size_t k = strlen(c->what);
  snprintf(c->what + k, sizeof c->what - k, "%s", k ? "; " : "");
  k = strlen(c->what);
  snprintf(c->what + k, sizeof c->what - k, fmt, rank, at,
           o ? bs_corpus_prog_name(c, o->g) : "-");
}

/* The smallest ring that still holds a step of every rank's entries
 * (less would leave a rank no entry of some group: where it is in it
 * could not be known), and two more. */
static int ring(const bs_corpus *c, const plan *p) {
  size_t most = 0;
  for (int r = 0; r < c->world; r++) {
    size_t entries = 0;
    for (size_t i = 0; i < c->rank[r].n; i++)
      entries += c->rank[r].op[i].kind == BS_CK_PAIR
                     ? (c->rank[r].op[i].to >= 0) + (c->rank[r].op[i].from >= 0)
                     : 1;
    most = entries > most ? entries : most;
  }
  return (int)(most / (size_t)p->steps) + 2;
}

/* ---- the program ---- */

static bs_status none_to(const char *what) {
  return bs_err_fail(BS_ERR_INVALID, NULL, "no op to %s", what);
}

/* A stall before an op, with a dump, or a death without one. */
static bs_status fault_stall(bs_corpus *c, rng *r, const plan *p, int rank,
                             bool dump) {
  int at = draw_op(r, c, rank, p, false);
  if (at < 0)
    return none_to("stall at");
  say(c,
      dump ? "rank %d stalls before op %d (group %s)"
           : "rank %d dies before op %d (group %s), no dump",
      rank, at);
  stall(c, rank, at, dump);
  return BS_OK;
}

/* Skip and go on; a run ahead where its later ops match. */
static bs_status fault_skip(bs_corpus *c, rng *r, const plan *p, int rank) {
  int at = draw_op(r, c, rank, p, true);
  if (at < 0)
    return none_to("skip");
  say(c, "rank %d skips op %d (group %s) and goes on", rank, at);
  skip(c, rank, at);
  return BS_OK;
}

/* Two or three independent roots, each a stall or a skip. */
static bs_status fault_roots(bs_corpus *c, rng *r, const plan *p) {
  for (int k = 0, n = 2 + below(r, 2); k < n; k++) {
    int who = below(r, c->world), at;
    bool taken = false;
    for (int f = 0; f < c->nfaults; f++)
      taken |= c->fault[f].rank == who;
    if (taken)
      continue;
    if ((at = draw_op(r, c, who, p, chance(r, 30))) < 0)
      return none_to("fault");
    bool go_on = is_coll(&c->rank[who].op[at]) && chance(r, 30);
    say(c,
        go_on ? "rank %d skips op %d (group %s) and goes on"
              : "rank %d stalls before op %d (group %s)",
        who, at);
    if (go_on)
      skip(c, who, at);
    else
      stall(c, who, at, true);
  }
  return BS_OK;
}

/* A rank that swaps two groups' ops; or (slices: always where asked)
 * half of a slice swapping its two extra groups' ops of one step. */
static bs_status fault_swap(bs_corpus *c, rng *r, const plan *p, int rank,
                            bool slice) {
  int who[512] = {0}, n = 0;
  const bs_corpus_group *g = NULL;
  int at = p->extra_a && slice ? -1 : swappable(r, c, rank, p);
  if (at < 0 && p->extra_a) {
    g = &c->groups[p->extra_a - 1];
    rank = g->ranks[0];
    for (at = 0;
         (size_t)at < c->rank[rank].n && c->rank[rank].op[at].g != p->extra_a;
         at++)
      ;
    at += (int)(c->rank[rank].n / (size_t)p->steps) * below(r, p->steps);
  }
  if (at < 0)
    return none_to("swap");
  if (g)
    for (int i = g->n / 2; i < g->n; i++)
      who[n++] = g->ranks[i];
  else
    who[n++] = rank;
  say(c, "rank %d and those alike swap op %d (group %s) with the next", who[0],
      at);
  swap(c, who, n, at, at + 1);
  return BS_OK;
}

/* Another size, shape, dtype or op (an all_to_all's sizes are each rank's
 * own: not one). */
static bs_status fault_mismatch(bs_corpus *c, rng *r, const plan *p, int rank) {
  int at = draw_op(r, c, rank, p, true);
  if (at < 0 || c->rank[rank].op[at].coll == BS_CC_ALL_TO_ALL)
    return none_to("change");
  say(c, "rank %d issues op %d (group %s) of another ", rank, at);
  snprintf(c->what + strlen(c->what), sizeof c->what - strlen(c->what), "%s",
           mismatch(c, r, rank, at));
  return BS_OK;
}

/* A ring that wraps: a stall late in a long job. */
static bs_status fault_ring(bs_corpus *c, rng *r, const plan *p, int rank) {
  c->fr_buffer = ring(c, p);
  int at = (int)c->rank[rank].n - 1 -
           below(r, (int)(c->rank[rank].n / (size_t)p->steps));
  say(c, "rank %d stalls before op %d (group %s); small rings", rank, at);
  stall(c, rank, at, true);
  return BS_OK;
}

/* Nodes of equal size, as a launcher places ranks: some 8 a node (2 nodes
 * below 16 ranks), the nearest count that divides the world into nodes
 * of 2 ranks or more; 0 where none does (a prime world). */
static int node_count(int world) {
  int want = world >= 16 ? world / 8 : 2;
  for (int d = 0; d < world; d++)
    for (int s = -1; s <= 1; s += 2) {
      int n = want + s * d;
      if (n >= 2 && world % n == 0 && world / n >= 2)
        return n;
    }
  return 0;
}

/* A node's folder of dumps missing, a stall on another. */
static bs_status fault_node(bs_corpus *c, rng *r, const plan *p, int rank) {
  c->nodes = node_count(c->world);
  if (!c->nodes)
    return none_to("split into nodes");
  c->missing_node = below(r, c->nodes);
  while (rank / (c->world / c->nodes) == c->missing_node)
    rank = (rank + 1) % c->world;
  int at = draw_op(r, c, rank, p, false);
  if (at < 0)
    return none_to("stall at");
  say(c, "rank %d stalls before op %d (group %s); a node's folder missing",
      rank, at);
  stall(c, rank, at, true);
  for (int k = 0; k < c->world; k++)
    if (k / (c->world / c->nodes) == c->missing_node)
      c->rank[k].no_dump = true;
  return BS_OK;
}

/* One fault drawn; BS_ERR_INVALID where it has nothing to apply to (the
 * program is drawn again). */
static bs_status fault(bs_corpus *c, rng *r, const plan *p) {
  int kind = below(r, 10), rank = below(r, c->world);
  switch (kind) {
  case 0:
  case 1:
    return fault_stall(c, r, p, rank, kind == 0);
  case 2:
    return fault_skip(c, r, p, rank);
  case 3:
    return fault_roots(c, r, p);
  case 4:
  case 5:
    return fault_swap(c, r, p, rank, kind == 5);
  case 6:
    return fault_mismatch(c, r, p, rank);
  case 7:
    return fault_ring(c, r, p, rank);
  default:
    return fault_node(c, r, p, rank);
  }
}

/* Two more groups over one dp slice's ranks (new_group each, descs of
 * their own), an op of each a step, for swaps between two groups of the
 * same ranks. */
static bool extra_groups(bs_corpus *c, rng *r, const mesh *m, plan *p) {
  if (m->size[DP] < 2 || !chance(r, 35))
    return true;
  /* Copied: adding a group moves c->groups. */
  const bs_corpus_group *dp = &c->groups[m->of[DP][0] - 1];
  int ranks[512], n = dp->n;
  memcpy(ranks, dp->ranks, (size_t)n * sizeof *ranks);
  p->extra_a = add_group(c, ranks, n, "grad_sync", -1);
  p->extra_b = add_group(c, ranks, n, "metrics", -1);
  return p->extra_a > 0 && p->extra_b > 0 &&
         add_make(c, (bs_corpus_maker){.how = BS_CM_GROUP,
                                       .group = p->extra_a - 1}) &&
         add_make(
             c, (bs_corpus_maker){.how = BS_CM_GROUP, .group = p->extra_b - 1});
}

bs_status bs_corpus_gen_draw(bs_corpus *c, const bs_corpus_limits *lim,
                             uint64_t attempt) {
  bs_status st = BS_OK;
  rng r = {c->seed * 0x100000001B3ull ^ (c->index + 1) * 0x9E3779B97F4A7C15ull ^
           attempt * 0xD6E8FEB86659FD93ull};
  mesh m = {0};
  plan p = {0};
  int lo = lim && lim->min_ranks ? lim->min_ranks : 4;
  int hi = lim && lim->max_ranks ? lim->max_ranks : 512;
  draw_mesh(&r, lo, hi, &m);
  c->world = world_of(&m);
  c->missing_node = -1;
  if (!(c->rank = calloc((size_t)c->world, sizeof *c->rank)) ||
      !make_groups(c, &r, &m))
    BS_FAIL(BS_ERR_NOMEM, NULL, "corpus: a program of %d ranks", c->world);
  draw_plan(&r, &p, chance(&r, 50));
  if (!extra_groups(c, &r, &m, &p))
    BS_FAIL(BS_ERR_NOMEM, NULL, "corpus: groups");
  for (int s = 0; s < p.steps; s++)
    for (int k = 0; k < c->world; k++)
      if (!step(c, &m, &p, k))
        BS_FAIL(BS_ERR_NOMEM, NULL, "corpus: a program of %d ranks", c->world);
  BS_CHECK(fault(c, &r, &p));
out:
  for (int d = 0; d < NDIMS; d++)
    free(m.of[d]);
  return st;
}

void bs_corpus_gen_free(bs_corpus *c) {
  for (int g = 0; g < c->ngroups; g++)
    free(c->groups[g].ranks);
  for (int k = 0; c->rank && k < c->world; k++)
    free(c->rank[k].op);
  free(c->groups);
  free(c->make);
  free(c->rank);
  c->groups = NULL;
  c->make = NULL;
  c->rank = NULL;
  c->ngroups = c->nmake = 0;
  c->nfaults = 0;
  c->what[0] = '\0';
  c->fr_buffer = c->nodes = 0;
}
