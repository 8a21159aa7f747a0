#include "bs_fork_chan.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

bool bs_fork_chan_put(int sock, const void *msg, size_t len, int fd) {
  char ctl[CMSG_SPACE(sizeof(int))];
  memset(ctl, 0, sizeof ctl);
  struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
  struct msghdr h = {.msg_iov = &iov, .msg_iovlen = 1};
  if (fd >= 0) {
    h.msg_control = ctl;
    h.msg_controllen = sizeof ctl;
    struct cmsghdr *c = CMSG_FIRSTHDR(&h);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof fd);
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  return sendmsg(sock, &h, MSG_NOSIGNAL) == (ssize_t)len;
}

/* The descriptor a message carried, -1: none. */
static int carried(struct msghdr *h) {
  struct cmsghdr *c = CMSG_FIRSTHDR(h);
  int fd = -1;
  if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

bool bs_fork_chan_get(int sock, void *msg, size_t len, int *fd, int wait_ms) {
  struct pollfd p = {.fd = sock, .events = POLLIN};
  int r;
  while ((r = poll(&p, 1, wait_ms)) < 0 && errno == EINTR)
    ;
  if (r <= 0)
    return false;
  char ctl[CMSG_SPACE(sizeof(int))];
  struct iovec iov = {.iov_base = msg, .iov_len = len};
  struct msghdr h = {.msg_iov = &iov,
                     .msg_iovlen = 1,
                     .msg_control = ctl,
                     .msg_controllen = sizeof ctl};
  ssize_t n;
  while ((n = recvmsg(sock, &h, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
    ;
  int got = n >= 0 ? carried(&h) : -1;
  if (fd)
    *fd = got;
  else if (got >= 0)
    close(got);
  return n == (ssize_t)len;
}
