#include "sync/bs_wire.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

/* Waits until fd is ready for `events`; 0, or ETIMEDOUT / errno. */
static int wait_ready(int fd, short events, int timeout_ms) {
  struct pollfd p = {.fd = fd, .events = events};
  for (;;) {
    int r = poll(&p, 1, timeout_ms);
    if (r > 0)
      return 0; /* ready, or an error/hangup the next call will report */
    if (r == 0)
      return ETIMEDOUT;
    if (errno != EINTR)
      return errno;
  }
}

/* iov[0..n) past the first w bytes sent: *iov, *n moved on. */
static void advance(struct iovec **iov, int *n, size_t w) {
  while (*n > 0 && w >= (*iov)->iov_len) {
    w -= (*iov)->iov_len;
    (*iov)++;
    (*n)--;
  }
  if (*n > 0) {
    (*iov)->iov_base = (char *)(*iov)->iov_base + w;
    (*iov)->iov_len -= w;
  }
}

/* iov[0..n) (modified as it goes), empty pieces allowed. */
static int write_all(int fd, struct iovec *iov, int n, int timeout_ms) {
  advance(&iov, &n, 0);
  while (n > 0) {
    /* MSG_NOSIGNAL: a dead peer is EPIPE here, not a SIGPIPE that kills
     * the whole trainer. MSG_DONTWAIT: the wait is the bounded poll. */
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    ssize_t w = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      advance(&iov, &n, (size_t)w);
      continue;
    }
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
      return errno;
    int rc = wait_ready(fd, POLLOUT, timeout_ms);
    if (rc)
      return rc;
  }
  return 0;
}

int bs_wire_writev(int fd, struct iovec *iov, int n, int timeout_ms) {
  return write_all(fd, iov, n, timeout_ms);
}

int bs_wire_write(int fd, const void *buf, size_t n, int timeout_ms) {
  struct iovec one = {(void *)buf, n};
  return write_all(fd, &one, 1, timeout_ms);
}

/* One recv of up to n bytes into buf once fd has any: how many in *got. */
static int read_once(int fd, void *buf, size_t n, size_t *got, int timeout_ms) {
  for (;;) {
    ssize_t r = recv(fd, buf, n, MSG_DONTWAIT);
    if (r > 0) {
      *got = (size_t)r;
      return 0;
    }
    if (r == 0)
      return ECONNRESET; /* EOF: the peer is gone */
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return errno;
    int rc = wait_ready(fd, POLLIN, timeout_ms);
    if (rc)
      return rc;
  }
}

int bs_wire_read(int fd, void *buf, size_t n, int timeout_ms) {
  char *p = buf;
  while (n > 0) {
    size_t got = 0;
    int rc = read_once(fd, p, n, &got, timeout_ms);
    if (rc)
      return rc;
    p += got;
    n -= got;
  }
  return 0;
}

int bs_wire_read_some(int fd, void *buf, size_t cap, size_t *got,
                      int timeout_ms) {
  *got = 0;
  return cap ? read_once(fd, buf, cap, got, timeout_ms) : 0;
}

int bs_wire_frame(int fd, uint32_t type, const void *payload, size_t len,
                  uint64_t extra_len, int timeout_ms) {
  bs_eframe h = {
      .magic = BS_ENGINE_MAGIC, .type = type, .len = len + extra_len};
  struct iovec iov[2] = {{&h, sizeof h}, {(void *)payload, len}};
  return write_all(fd, iov, 2, timeout_ms);
}

int bs_wire_frame_iov(bs_eframe *h, uint32_t type, const void *payload,
                      size_t len, const struct iovec *tail, int ntail,
                      struct iovec *out) {
  if (ntail < 0 || ntail > BS_WIRE_TAIL_MAX)
    return -1;
  *h = (bs_eframe){.magic = BS_ENGINE_MAGIC, .type = type, .len = len};
  out[0] = (struct iovec){h, sizeof *h};
  out[1] = (struct iovec){(void *)payload, len};
  for (int i = 0; i < ntail; i++) {
    out[2 + i] = tail[i];
    h->len += tail[i].iov_len;
  }
  return 2 + ntail;
}

int bs_wire_frame_tail(int fd, uint32_t type, const void *payload, size_t len,
                       const struct iovec *tail, int ntail, int timeout_ms) {
  bs_eframe h;
  struct iovec iov[2 + BS_WIRE_TAIL_MAX];
  int n = bs_wire_frame_iov(&h, type, payload, len, tail, ntail, iov);
  return n < 0 ? EINVAL : write_all(fd, iov, n, timeout_ms);
}
