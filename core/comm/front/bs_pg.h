/* A process group as the world keeps it (bs_comm_group): its id, name,
 * description and members, shared by its members' handles in this
 * process, with the backend's state of it. Internal to the communicator. */
#ifndef BS_PG_H
#define BS_PG_H

#include <stddef.h>
#include <stdint.h>

#define BS_PG_NAME 64

typedef struct bs_pg {
  int id; /* from 1, in order of making in this process (0: the world) */
  char name[BS_PG_NAME], desc[BS_PG_NAME];
  int n;
  int *members; /* global ranks, ascending */
  /* By group rank: the last collective each member here completed, and
   * whether it has a handle now (the world's lock). */
  uint64_t *last_done;
  void *impl; /* the backend's (group_new) */
} bs_pg;

/* Frees pg (NULL is fine); the backend's state goes first (group_free). */
void bs_pg_free(bs_pg *pg);
/* The group rank of global rank r in pg, -1 when it is no member. */
int bs_pg_rank_of(const bs_pg *pg, int r);
/* The global rank of group rank i (pg NULL: the world, i itself). */
int bs_pg_global(const bs_pg *pg, int i);
/* base.pg.<name>, the name's characters other than letters and digits
 * as '_': the group's file beside the world's (its board, its id); base
 * itself for the world (pg NULL). */
void bs_pg_file(const bs_pg *pg, const char *base, char *out, size_t n);
/* " of group NAME" for messages ("" for the world), in buf. */
const char *bs_pg_of_text(const bs_pg *pg, char *buf, size_t n);

#endif
