/* The registry of task-local variables (bs_task_local.h). Registration
 * happens in constructors, before any thread starts: no lock. */
#include "bs_task_local.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LOCALS_MAX = 16 };

static const bs_task_local *locals[LOCALS_MAX];
static size_t nlocals, total;

void bs_task_local_add(const bs_task_local *l) {
  if (nlocals == LOCALS_MAX) { /* a build-time limit, met at load time */
    fprintf(stderr, "backstop: more than %d task-local variables\n",
            LOCALS_MAX);
    abort();
  }
  locals[nlocals++] = l;
  total += l->size;
}

size_t bs_task_local_bytes(void) {
  return total;
}

void bs_task_local_init(void *to) {
  char *p = to;
  for (size_t i = 0; i < nlocals; p += locals[i++]->size)
    if (locals[i]->init)
      memcpy(p, locals[i]->init, locals[i]->size);
    else
      memset(p, 0, locals[i]->size);
}

void bs_task_local_save(void *to) {
  char *p = to;
  for (size_t i = 0; i < nlocals; p += locals[i++]->size)
    memcpy(p, locals[i]->addr(), locals[i]->size);
}

void bs_task_local_load(const void *from) {
  const char *p = from;
  for (size_t i = 0; i < nlocals; p += locals[i++]->size)
    memcpy(locals[i]->addr(), p, locals[i]->size);
}
