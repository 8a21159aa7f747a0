/* What the communicator runs for a recorded op and dtype
 * (bs_replay_int.h): its own collective, else a stand-in that makes every
 * member wait for every other as the op does, recorded, reported and
 * compared under the op's own name (bs_comm_set_next_name); its own
 * dtype, else one of the same size. Jobs use ops and dtypes the
 * communicator never needs (all_to_all, gather, Double, Half): their hangs
 * replay all the same. */
#include <stdio.h>
#include <string.h>

#include "bs_buf.h"
#include "bs_replay_int.h"

/* Distinct stand-ins listed at most (then each again is said again). */
#define MAX_SAID 64

/* Backstop's collective for PyTorch's profiling name (its coalesced and
 * tensor-list forms included). */
static bool own_op(const char *op, bs_coll *out) {
  static const struct {
    const char *has;
    bs_coll op;
  } map[] = {
      {"comm_init", BS_COLL_COMM_INIT},
      {"barrier", BS_COLL_BARRIER},
      {"all_gather", BS_COLL_ALL_GATHER},
      {"allgather", BS_COLL_ALL_GATHER},
      {"reduce_scatter", BS_COLL_REDUCE_SCATTER},
      {"all_reduce", BS_COLL_ALL_REDUCE},
      {"allreduce", BS_COLL_ALL_REDUCE},
      {"broadcast", BS_COLL_BROADCAST},
  };
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strstr(op, map[i].has)) {
      *out = map[i].op;
      return true;
    }
  return false;
}

bs_replay_op bs_replay_ops_coll(const char *op) {
  bs_replay_op r = {.op = BS_COLL_BARRIER, .stand_in = true};
  if (own_op(op, &r.op)) {
    r.stand_in = false;
    return r;
  }
  /* Rooted ops move equal counts on every rank on one side (a gather's
   * inputs, a scatter's outputs, a reduce's both): an all_reduce of those.
   * An all_to_all's counts are each rank's own, and anything else is not
   * known: a barrier, which only makes every member meet. */
  bs_dumps_form form = bs_dumps_op_form(op);
  if (form == BS_DUMPS_GATHER || form == BS_DUMPS_SCATTER ||
      (form == BS_DUMPS_EVEN && strstr(op, "reduce")))
    r.op = BS_COLL_ALL_REDUCE;
  r.by_out = form == BS_DUMPS_SCATTER;
  return r;
}

bool bs_replay_ops_dtype(const char *torch, bs_dtype *out,
                         const char **stand_in) {
  /* Sizes of PyTorch's other dtypes (c10's ScalarType names). */
  static const struct {
    const char *name;
    bs_dtype as;
  } same_size[] = {
      {"Double", BS_I64},
      {"Half", BS_BF16},
      {"Bool", BS_U8},
      {"Char", BS_U8},
      {"Short", BS_BF16},
      {"UInt16", BS_BF16},
      {"UInt32", BS_I32},
      {"UInt64", BS_I64},
      {"ComplexHalf", BS_I32},
      {"ComplexFloat", BS_I64},
      {"Float8_e4m3fn", BS_U8},
      {"Float8_e5m2", BS_U8},
      {"Float8_e4m3fnuz", BS_U8},
      {"Float8_e5m2fnuz", BS_U8},
      {"Float8_e8m0fnu", BS_U8},
  };
  *stand_in = NULL;
  if (bs_dumps_op_dtype(torch, out))
    return true;
  for (size_t i = 0; i < sizeof same_size / sizeof same_size[0]; i++)
    if (strcmp(torch, same_size[i].name) == 0) {
      *out = same_size[i].as;
      *stand_in = same_size[i].name;
      return true;
    }
  return false;
}

/* Appends "x as y" once for each distinct x: x is interned (an op's name)
 * or static (a dtype's), so pointers tell them apart; seen[] holds those
 * said so far. */
static void say(bs_buf *b, const char **seen, size_t *n, const char *x,
                const char *y) {
  for (size_t k = 0; k < *n; k++)
    if (seen[k] == x)
      return;
  if (*n < MAX_SAID)
    seen[(*n)++] = x;
  bs_buf_printf(b, "%s%s as %s", b->len ? ", " : "", x, y);
}

void bs_replay_ops_said(const bs_replay_state *r, bs_buf *out) {
  bs_buf b = {0};
  const char *seen[MAX_SAID];
  size_t n = 0;
  for (int i = 0; i < r->n; i++)
    for (size_t k = 0; k < r->plan[i].n; k++) {
      const bs_replay_step *s = &r->plan[i].s[k];
      if (s->name)
        say(&b, seen, &n, s->name, bs_coll_name(s->op) + strlen("nccl:"));
      if (s->dt_name)
        say(&b, seen, &n, s->dt_name, bs_dtype_name(s->dt));
    }
  if (b.len)
    bs_buf_printf(out,
                  "  stand-ins (the communicator has none of these; each "
                  "recorded and compared under its own name): %s\n",
                  b.s);
  bs_buf_free(&b);
}
