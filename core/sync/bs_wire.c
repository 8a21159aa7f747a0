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

int bs_wire_write(int fd, const void *buf, size_t n, int timeout_ms) {
  const char *p = buf;
  while (n > 0) {
    /* MSG_NOSIGNAL: a dead peer is EPIPE here, not a SIGPIPE that kills
     * the whole trainer. MSG_DONTWAIT: the wait is the bounded poll. */
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      p += w;
      n -= (size_t)w;
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

int bs_wire_read(int fd, void *buf, size_t n, int timeout_ms) {
  char *p = buf;
  while (n > 0) {
    ssize_t r = recv(fd, p, n, MSG_DONTWAIT);
    if (r > 0) {
      p += r;
      n -= (size_t)r;
      continue;
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
  return 0;
}

int bs_wire_frame(int fd, uint32_t type, const void *payload, size_t len,
                  uint64_t extra_len, int timeout_ms) {
  bs_eframe h = {
      .magic = BS_ENGINE_MAGIC, .type = type, .len = len + extra_len};
  int rc = bs_wire_write(fd, &h, sizeof h, timeout_ms);
  if (rc == 0 && len > 0)
    rc = bs_wire_write(fd, payload, len, timeout_ms);
  return rc;
}
