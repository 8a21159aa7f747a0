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

/* The most descriptors one message carries (an engine process's sockets,
 * bs_limits.h's BS_ENGINE_GROUP_MAX, at most). */
#define BS_FORK_CHAN_FDS_MAX 64

/* msg (len bytes) over sock, with descriptor fd (-1: none); false when
 * the other end is gone. */
bool bs_fork_chan_put(int sock, const void *msg, size_t len, int fd);
/* The same with n descriptors fds[0..n) (n at most BS_FORK_CHAN_FDS_MAX). */
bool bs_fork_chan_put_fds(int sock, const void *msg, size_t len, const int *fds,
                          int n);
/* The next message of len bytes, waited for up to wait_ms, and the
 * descriptor it carries in *fd (-1: none; fd NULL: none wanted); false
 * when the channel closed, the wait ran out or it is not such a
 * message. */
bool bs_fork_chan_get(int sock, void *msg, size_t len, int *fd, int wait_ms);
/* The same with up to max descriptors into fds, *n of them (past max, or
 * fds NULL: closed); wait_ms < 0: no bound (the zygote's wait for its
 * next request: its end is the channel's). */
bool bs_fork_chan_get_fds(int sock, void *msg, size_t len, int *fds, int max,
                          int *n, int wait_ms);

#endif
