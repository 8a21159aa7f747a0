/* A reused child of the runner (bs_fork.h, reuse) and its parent: the
 * worker's channel. The parent sends each job's index with the write end
 * of that job's pipe (SCM_RIGHTS); the worker runs the job into it,
 * closes it, and answers with a word: the child's return and whether it
 * may serve another (bs_fork.keep). A worker told no more (its channel
 * closed) or that may not go on exits. */
#ifndef BS_FORK_CHAN_H
#define BS_FORK_CHAN_H

#include <stdbool.h>
#include <stddef.h>

typedef struct bs_fork_word {
  int code;  /* the child's return for the job */
  bool keep; /* the worker serves another */
} bs_fork_word;

/* In the parent: job and its pipe's write end to the worker; false when
 * the worker is gone. */
bool bs_fork_chan_send(int ctl, size_t job, int fd);
/* In the parent, ctl readable: the worker's word; false when its channel
 * closed (it is going) or the word is not one. */
bool bs_fork_chan_word(int ctl, bs_fork_word *w);

/* In the worker: the next job and its pipe (waited for, bounded); false
 * when the channel closed (or failed). */
bool bs_fork_chan_next(int ctl, size_t *job, int *fd);
/* In the worker: its word on the job just run; false when the parent is
 * gone. */
bool bs_fork_chan_answer(int ctl, const bs_fork_word *w);

#endif
