#include "bs_fork_chan.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

bool bs_fork_chan_put_fds(int sock, const void *msg, size_t len, const int *fds,
                          int n) {
  char ctl[CMSG_SPACE(sizeof(int) * BS_FORK_CHAN_FDS_MAX)];
  struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
  struct msghdr h = {.msg_iov = &iov, .msg_iovlen = 1};
  ssize_t sent;
  if (n < 0 || n > BS_FORK_CHAN_FDS_MAX)
    return false;
  if (n > 0) {
    memset(ctl, 0, sizeof ctl);
    h.msg_control = ctl;
    h.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n);
    struct cmsghdr *c = CMSG_FIRSTHDR(&h);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)n);
  }
  while ((sent = sendmsg(sock, &h, MSG_NOSIGNAL)) < 0 && errno == EINTR)
    ;
  return sent == (ssize_t)len;
}

bool bs_fork_chan_put(int sock, const void *msg, size_t len, int fd) {
  return bs_fork_chan_put_fds(sock, msg, len, &fd, fd >= 0 ? 1 : 0);
}

/* The descriptors a message carried: up to max into fds, the rest
 * closed; how many kept. */
static int carried(struct msghdr *h, int *fds, int max) {
  int kept = 0;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
      continue;
    size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < k; i++) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof fd, sizeof fd);
      if (fds && kept < max)
        fds[kept++] = fd;
      else
        close(fd);
    }
  }
  return kept;
}

bool bs_fork_chan_get_fds(int sock, void *msg, size_t len, int *fds, int max,
                          int *n, int wait_ms) {
  struct pollfd p = {.fd = sock, .events = POLLIN};
  int r;
  *n = 0;
  while ((r = poll(&p, 1, wait_ms)) < 0 && errno == EINTR)
    ;
  if (r <= 0)
    return false;
  char ctl[CMSG_SPACE(sizeof(int) * BS_FORK_CHAN_FDS_MAX)];
  struct iovec iov = {.iov_base = msg, .iov_len = len};
  struct msghdr h = {.msg_iov = &iov,
                     .msg_iovlen = 1,
                     .msg_control = ctl,
                     .msg_controllen = sizeof ctl};
  ssize_t got;
  while ((got = recvmsg(sock, &h, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
    ;
  if (got >= 0)
    *n = carried(&h, fds, max);
  return got == (ssize_t)len;
}

bool bs_fork_chan_get(int sock, void *msg, size_t len, int *fd, int wait_ms) {
  int n = 0, got = -1;
  bool ok =
      bs_fork_chan_get_fds(sock, msg, len, fd ? &got : NULL, 1, &n, wait_ms);
  if (fd)
    *fd = n ? got : -1;
  return ok;
}
