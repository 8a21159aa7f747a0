/* A reused child of the runner (bs_fork.h, reuse): the worker's side of
 * its channel with the parent. The parent sends each job's index with the
 * write end of that job's pipe (SCM_RIGHTS); the worker runs the job into
 * it, closes it, and answers with a word: the child's return and whether
 * it may serve another (bs_fork.keep). A worker told no more (its channel
 * closed) or that may not go on exits. */
#ifndef BS_FORK_SERVE_H
#define BS_FORK_SERVE_H

#include <stdbool.h>
#include <stddef.h>

#include "bs_fork.h"

typedef struct bs_fork_word {
  int code;  /* the child's return for the job */
  bool keep; /* the worker serves another */
} bs_fork_word;

/* In a new worker: serves the jobs its channel sends until it is closed
 * or a job leaves the worker unfit (r->keep), then exits. */
_Noreturn void bs_fork_serve(const bs_fork *r, int ctl);

/* In the parent: job and its pipe's write end to the worker; false when
 * the worker is gone. */
bool bs_fork_serve_send(int ctl, size_t job, int fd);
/* In the parent, ctl readable: the worker's word; false when its channel
 * closed (it is going) or the word is not one. */
bool bs_fork_serve_word(int ctl, bs_fork_word *w);

#endif
