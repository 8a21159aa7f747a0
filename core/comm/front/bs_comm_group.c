/* Process groups (bs_comm.h): a group of the world made by its first
 * member here (the others find it), and a member's handle of it. */
#include "comm/front/bs_comm_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_vec.h"

static bs_status check_members(const bs_comm *c, const char *name,
                               const int *members, int n) {
  int size = c->w->o.global_size;
  if (!members || n < 1 || n > size)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "group %s: %d members (1..%d of the world)", name, n,
                       size);
  for (int i = 0; i < n; i++)
    if (members[i] < 0 || members[i] >= size ||
        (i && members[i] <= members[i - 1]))
      return bs_err_fail(BS_ERR_INVALID, NULL,
                         "group %s: member %d (%d) is not a rank of 0..%d in "
                         "ascending order",
                         name, i, members[i], size - 1);
  for (int i = 0; i < n; i++)
    if (members[i] == c->grank)
      return BS_OK;
  return bs_err_fail(BS_ERR_INVALID, NULL,
                     "group %s: rank %d makes it but is no member", name,
                     c->grank);
}

static bs_pg *find(const bs_world *w, const char *name) {
  for (int i = 0; i < w->npgs; i++)
    if (strcmp(w->pgs[i]->name, name) == 0)
      return w->pgs[i];
  return NULL;
}

/* A new group of the world (w->mu held), the backend's state with it. */
static bs_status pg_new(bs_world *w, const char *name, const char *desc,
                        const int *members, int n, bs_pg **out) {
  bs_status st = BS_OK;
  bs_pg *pg = calloc(1, sizeof *pg);
  if (!bs_vec_grow(&w->pgs, &w->pgs_cap, (size_t)w->npgs + 1, sizeof *w->pgs))
    BS_FAIL(BS_ERR_NOMEM, NULL, "group %s: out of memory", name);
  if (!pg || !(pg->members = malloc((size_t)n * sizeof *pg->members)) ||
      !(pg->last_done = calloc((size_t)n, sizeof *pg->last_done)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "group %s: out of memory", name);
  pg->id = w->npgs + 1;
  pg->n = n;
  memcpy(pg->members, members, (size_t)n * sizeof *members);
  snprintf(pg->name, sizeof pg->name, "%s", name);
  snprintf(pg->desc, sizeof pg->desc, "%s", desc ? desc : "undefined");
  BS_CHECK(w->be->group_new(w, pg));
  w->pgs[w->npgs++] = pg;
  *out = pg;
  pg = NULL;
out:
  bs_pg_free(pg);
  return st;
}

/* The group name names in the world, made by its first member here; the
 * others must name the same members. */
static bs_status pg_get(bs_world *w, const char *name, const char *desc,
                        const int *members, int n, bs_pg **out) {
  bs_status st = BS_OK;
  pthread_mutex_lock(&w->mu);
  bs_pg *pg = find(w, name);
  if (!pg)
    st = pg_new(w, name, desc, members, n, &pg);
  else if (pg->n != n ||
           memcmp(pg->members, members, (size_t)n * sizeof *members) != 0)
    st = bs_err_fail(BS_ERR_CONFIG, NULL,
                     "group %s: made again with other members (%d of them, "
                     "%d before)",
                     name, n, pg->n);
  pthread_mutex_unlock(&w->mu);
  *out = st == BS_OK ? pg : NULL;
  return st;
}

bs_status bs_comm_group(bs_comm *world, const char *name, const char *desc,
                        const int *members, int n, bs_comm **out) {
  bs_status st = BS_OK;
  bs_comm *g = NULL;
  bs_pg *pg = NULL;
  bs_coll_args a = {.op = BS_COLL_COMM_INIT, .label = "new_group"};
  if (out)
    *out = NULL;
  if (!world || !out || world->pg || !name || !name[0] ||
      strlen(name) >= BS_PG_NAME || (desc && strlen(desc) >= BS_PG_NAME))
    BS_FAIL(BS_ERR_INVALID, NULL,
            "group: needs a world handle, a name and a description of less "
            "than %d characters",
            BS_PG_NAME);
  if (!world->w->be->group_new)
    BS_FAIL(BS_ERR_UNSUPPORTED, NULL,
            "group %s: the %s backend has no process groups", name,
            world->w->be->name);
  BS_CHECK(check_members(world, name, members, n));
  BS_CHECK(bs_comm_front_admit(world, &a));
  BS_CHECK(pg_get(world->w, name, desc, members, n, &pg));
  if (!(g = calloc(1, sizeof *g)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "group %s: out of memory", name);
  *g = (bs_comm){.w = world->w,
                 .rank = world->rank,
                 .grank = world->grank,
                 .dev = world->dev,
                 .fr = world->fr,
                 .parent = world,
                 .pg = pg,
                 .pg_rank = bs_pg_rank_of(pg, world->grank)};
  BS_CHECK(
      bs_flight_add_pg(g->fr, pg->id, pg->name, pg->desc, pg->members, pg->n));
  if (world->w->be->group_rank_init)
    BS_CHECK(world->w->be->group_rank_init(g));
  *out = g;
  g = NULL;
out:
  if (g && g->impl && g->w->be->group_rank_fini)
    g->w->be->group_rank_fini(g); /* what its init made before it failed */
  free(g);
  return st;
}

void bs_comm_group_free(bs_comm *g) {
  if (!g || !g->pg)
    return;
  if (g->w->be->group_rank_fini)
    g->w->be->group_rank_fini(g);
  free(g);
}

int bs_comm_group_rank(const bs_comm *c) {
  return c ? bs_comm_front_rank(c) : -1;
}

const char *bs_comm_group_name(const bs_comm *c) {
  return c && c->pg ? c->pg->name : "0";
}

const char *bs_comm_group_desc(const bs_comm *c) {
  return c && c->pg ? c->pg->desc : "default_pg";
}
