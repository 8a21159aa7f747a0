#include "bs_fork_chan.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A worker waits this long for its next job at most (its parent is alive
 * all along: a worker dies with it). */
enum { IDLE_MS = 3600 * 1000 };

typedef struct job_msg {
  size_t job;
} job_msg;

bool bs_fork_chan_send(int ctl, size_t job, int fd) {
  char ctlbuf[CMSG_SPACE(sizeof(int))];
  job_msg m = {.job = job};
  memset(ctlbuf, 0, sizeof ctlbuf);
  struct iovec iov = {.iov_base = &m, .iov_len = sizeof m};
  struct msghdr h = {.msg_iov = &iov,
                     .msg_iovlen = 1,
                     .msg_control = ctlbuf,
                     .msg_controllen = sizeof ctlbuf};
  struct cmsghdr *c = CMSG_FIRSTHDR(&h);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fd);
  memcpy(CMSG_DATA(c), &fd, sizeof fd);
  return sendmsg(ctl, &h, MSG_NOSIGNAL) == (ssize_t)sizeof m;
}

bool bs_fork_chan_word(int ctl, bs_fork_word *w) {
  ssize_t n;
  while ((n = recv(ctl, w, sizeof *w, 0)) < 0 && errno == EINTR)
    ;
  return n == (ssize_t)sizeof *w;
}

bool bs_fork_chan_next(int ctl, size_t *job, int *fd) {
  struct pollfd p = {.fd = ctl, .events = POLLIN};
  int r;
  while ((r = poll(&p, 1, IDLE_MS)) < 0 && errno == EINTR)
    ;
  if (r <= 0)
    return false;
  char ctlbuf[CMSG_SPACE(sizeof(int))];
  job_msg m;
  struct iovec iov = {.iov_base = &m, .iov_len = sizeof m};
  struct msghdr h = {.msg_iov = &iov,
                     .msg_iovlen = 1,
                     .msg_control = ctlbuf,
                     .msg_controllen = sizeof ctlbuf};
  if (recvmsg(ctl, &h, MSG_CMSG_CLOEXEC) != (ssize_t)sizeof m)
    return false;
  struct cmsghdr *c = CMSG_FIRSTHDR(&h);
  if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
    return false;
  memcpy(fd, CMSG_DATA(c), sizeof *fd);
  *job = m.job;
  return true;
}

bool bs_fork_chan_answer(int ctl, const bs_fork_word *w) {
  return send(ctl, w, sizeof *w, MSG_NOSIGNAL) == (ssize_t)sizeof *w;
}
