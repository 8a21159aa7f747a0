/* A channel between processes of the runner: fixed-size messages over a
 * SOCK_SEQPACKET socket, each with a descriptor or none (SCM_RIGHTS). A
 * reused child (bs_fork.h, reuse) gets each job's index with the write
 * end of that job's pipe and answers with a word: the child's return and
 * whether it may serve another (bs_fork.keep); the rank pool's workers
 * get their runs so (harness/run/bs_pool.c). */
#ifndef BS_FORK_CHAN_H
#define BS_FORK_CHAN_H

#include <stdbool.h>
#include <stddef.h>

typedef struct bs_fork_word {
  int code;  /* the child's return for the job */
  bool keep; /* the worker serves another */
} bs_fork_word;

/* msg (len bytes) over sock, with descriptor fd (-1: none); false when
 * the other end is gone. */
bool bs_fork_chan_put(int sock, const void *msg, size_t len, int fd);
/* The next message of len bytes, waited for up to wait_ms, and the
 * descriptor it carries in *fd (-1: none; fd NULL: none wanted); false
 * when the channel closed, the wait ran out or it is not such a
 * message. */
bool bs_fork_chan_get(int sock, void *msg, size_t len, int *fd, int wait_ms);

#endif
