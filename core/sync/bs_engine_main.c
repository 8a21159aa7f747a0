/* The engine process body: receives weight updates over the socket it was
 * given and verifies each tensor's SHA256 (check_weight_update_equal). */
#include "sync/bs_engine_main.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "bs_digest.h"
#include "bs_dtype.h"
#include "bs_num.h"
#include "bs_vec.h"
#include "sync/bs_engine.h"
#include "sync/bs_engine_zygote.h"
#include "sync/bs_wire.h"

enum { EXIT_QUIT = 0, EXIT_CLOSED, EXIT_USAGE, EXIT_PROTOCOL, EXIT_NOMEM };

/* A tensor larger than this is a corrupt frame, not a weight. */
#define MAX_TENSOR_BYTES (1ull << 36)
#define IO_MS 10000
#define AHEAD_BYTES (16 << 10)

/* Bytes read past what the frame being served needed, all of the
 * connection being served: one recv takes a small frame whole, where its
 * header, fields, name and bytes were a recv each (most of an engine's
 * system calls). A process's connections share it: one is served until
 * nothing of it is left ahead (serve_all), so none is left for another. */
typedef struct ahead {
  unsigned char b[AHEAD_BYTES];
  size_t at, len;
} ahead;

typedef struct engine {
  int fd, rank, idle_ms, count;
  ahead *ahead;
  bs_emsg_begin begin;
  bool flipped;
  /* The tensor received last is verified only when the next frame comes:
   * a flip aimed past the last tensor then still lands on the last one. */
  bool pending;
  bs_emsg_tensor meta;
  char name[BS_ENGINE_NAME_MAX + 1];
  unsigned char *buf;
  size_t cap;
  bs_digest *digests;
  size_t n, dcap;
  bs_emsg_reply reply;
} engine;

static int fatal(const engine *e, int code, const char *what) {
  fprintf(stderr, "backstop engine (rank %d): %s\n", e->rank, what);
  return code;
}

/* n bytes of the connection: those read ahead first, then a read ahead
 * (a tensor's bytes larger than that go straight where they belong). 0,
 * or bs_wire_read's errno. */
static int take(engine *e, void *dst, size_t n, int wait_ms) {
  ahead *a = e->ahead;
  unsigned char *p = dst;
  for (;;) {
    size_t c = a->len - a->at < n ? a->len - a->at : n;
    if (c)
      memcpy(p, a->b + a->at, c);
    a->at += c;
    p += c;
    n -= c;
    if (n == 0)
      return 0;
    if (n >= sizeof a->b)
      return bs_wire_read(e->fd, p, n, wait_ms);
    a->at = a->len = 0;
    int rc = bs_wire_read_some(e->fd, a->b, sizeof a->b, &a->len, wait_ms);
    if (rc)
      return rc;
  }
}

static bool has_ahead(const engine *e) {
  return e->ahead->at < e->ahead->len;
}

static int parse_args(engine *e, int argc, char **argv) {
  e->fd = -1;
  e->rank = -1;
  e->idle_ms = 600000;
  e->count = 1;
  for (int i = 1; i < argc; i += 2) {
    int *dst = strcmp(argv[i], "--fd") == 0        ? &e->fd
               : strcmp(argv[i], "--rank") == 0    ? &e->rank
               : strcmp(argv[i], "--idle-ms") == 0 ? &e->idle_ms
               : strcmp(argv[i], "--count") == 0   ? &e->count
                                                   : NULL;
    if (!dst || i + 1 >= argc || !bs_num_int(argv[i + 1], 0, INT_MAX, dst))
      return -1;
  }
  if (e->fd < 0 || e->rank < 0 || e->count < 1 ||
      e->count > BS_ENGINE_GROUP_MAX)
    return -1;
  for (int i = 0; i < e->count; i++)
    if (fcntl(e->fd + i, F_GETFD) < 0)
      return -1;
  return 0;
}

/* The engine/verify fault: corrupt what was received, so the mismatch the
 * engine reports comes from real bytes. */
static void maybe_flip(engine *e, bool last) {
  uint64_t bits = e->meta.nbytes * 8;
  if (!e->begin.flip || e->flipped || bits == 0 ||
      (e->n < e->begin.flip_tensor && !last))
    return;
  uint64_t bit = e->begin.flip_bit % bits;
  e->buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
  e->flipped = true;
}

static int verify_pending(engine *e, bool last) {
  if (!e->pending)
    return 0;
  e->pending = false;
  maybe_flip(e, last);
  if (!bs_vec_grow(&e->digests, &e->dcap, e->n + 1, sizeof *e->digests))
    return fatal(e, EXIT_NOMEM, "out of memory for digests");
  bs_digest *got = &e->digests[e->n];
  if (bs_digest_sha256(e->buf ? (void *)e->buf : (void *)"", e->meta.nbytes,
                       got))
    return fatal(e, EXIT_NOMEM, "SHA256 failed");
  if (memcmp(got->b, e->meta.expected, sizeof got->b) != 0 &&
      e->reply.nmismatch++ == 0) {
    e->reply.first_bad = e->n;
    snprintf(e->reply.first_bad_name, sizeof e->reply.first_bad_name, "%.*s",
             (int)sizeof e->reply.first_bad_name - 1, e->name);
  }
  e->n++;
  return 0;
}

static int on_begin(engine *e, uint64_t len) {
  if (len != sizeof e->begin || take(e, &e->begin, sizeof e->begin, IO_MS))
    return fatal(e, EXIT_PROTOCOL, "bad BEGIN frame");
  /* A new BEGIN drops an update the trainer abandoned. */
  e->pending = e->flipped = false;
  e->n = 0;
  memset(&e->reply, 0, sizeof e->reply);
  return 0;
}

static int on_tensor(engine *e, uint64_t len) {
  int rc = verify_pending(e, false);
  if (rc)
    return rc;
  bs_emsg_tensor *m = &e->meta;
  if (len < sizeof *m || take(e, m, sizeof *m, IO_MS) ||
      m->name_len > BS_ENGINE_NAME_MAX || m->dtype >= BS_DTYPE_COUNT ||
      m->nbytes > MAX_TENSOR_BYTES ||
      len != sizeof *m + m->name_len + m->nbytes)
    return fatal(e, EXIT_PROTOCOL, "bad TENSOR frame");
  /* Exactly the largest tensor so far: no doubling of a tensor's bytes. */
  if (m->nbytes > e->cap) {
    if (!bs_vec_grow(&e->buf, NULL, m->nbytes, 1))
      return fatal(e, EXIT_NOMEM, "out of memory for a tensor");
    e->cap = m->nbytes;
  }
  e->name[m->name_len] = '\0';
  if (take(e, e->name, m->name_len, IO_MS) || take(e, e->buf, m->nbytes, IO_MS))
    return fatal(e, EXIT_CLOSED, "connection lost inside a tensor");
  e->pending = true;
  return 0;
}

static int on_end(engine *e, uint64_t len) {
  bs_emsg_end end;
  int rc = verify_pending(e, true);
  if (rc)
    return rc;
  if (len != sizeof end || take(e, &end, sizeof end, IO_MS) ||
      end.ntensors != e->n)
    return fatal(e, EXIT_PROTOCOL, "bad END frame or tensor count");
  e->reply.ntensors = e->n;
  struct iovec digests = {e->digests, e->n * sizeof *e->digests};
  if (bs_wire_frame_tail(e->fd, BS_EMSG_REPLY, &e->reply, sizeof e->reply,
                         &digests, 1, IO_MS))
    return fatal(e, EXIT_CLOSED, "connection lost while replying");
  return 0;
}

/* The trainer re-establishes the session (its reconnect): answer it. */
static int on_hello(engine *e, uint64_t len) {
  if (len != 0)
    return fatal(e, EXIT_PROTOCOL, "HELLO with a payload");
  if (bs_wire_frame(e->fd, BS_EMSG_HELLO, NULL, 0, 0, IO_MS))
    return fatal(e, EXIT_CLOSED, "connection lost while greeting");
  return 0;
}

/* A kept engine's next rank (bs_engine_keep.h): as a fresh process. */
static int on_reset(engine *e, uint64_t len) {
  bs_emsg_reset m;
  if (len != sizeof m || take(e, &m, sizeof m, IO_MS) || m.rank < 0 ||
      m.rank > INT_MAX)
    return fatal(e, EXIT_PROTOCOL, "bad RESET frame");
  e->rank = (int)m.rank;
  bs_err_set_rank(e->rank);
  e->pending = e->flipped = false;
  e->n = 0;
  memset(&e->begin, 0, sizeof e->begin);
  memset(&e->reply, 0, sizeof e->reply);
  if (bs_wire_frame(e->fd, BS_EMSG_RESET, NULL, 0, 0, IO_MS))
    return fatal(e, EXIT_CLOSED, "connection lost while resetting");
  return 0;
}

/* One frame, waited for up to wait_ms: 0 to go on, -1 after QUIT, else an
 * exit code. */
static int serve_frame(engine *e, int wait_ms) {
  bs_eframe h;
  int io = take(e, &h, sizeof h, wait_ms);
  if (io == ECONNRESET)
    return EXIT_CLOSED; /* the trainer is gone */
  if (io)
    return fatal(e, EXIT_CLOSED, "no frame within the idle limit");
  if (h.magic != BS_ENGINE_MAGIC)
    return fatal(e, EXIT_PROTOCOL, "bad frame magic");
  return h.type == BS_EMSG_BEGIN    ? on_begin(e, h.len)
         : h.type == BS_EMSG_TENSOR ? on_tensor(e, h.len)
         : h.type == BS_EMSG_END    ? on_end(e, h.len)
         : h.type == BS_EMSG_HELLO  ? on_hello(e, h.len)
         : h.type == BS_EMSG_RESET  ? on_reset(e, h.len)
         : h.type == BS_EMSG_QUIT   ? -1
                                    : fatal(e, EXIT_PROTOCOL, "bad type");
}

/* Serves frames until QUIT (0) or an exit code. */
static int serve(engine *e) {
  int rc;
  while ((rc = serve_frame(e, e->idle_ms)) == 0)
    ;
  return rc < 0 ? EXIT_QUIT : rc;
}

/* Serves a ready connection's frame, and those read ahead with it; false
 * once it is done (its code folded into *rc: the first failure is the
 * process's). */
static bool serve_ready(engine *e, bool *spoke, int *rc) {
  int r;
  do
    *spoke |= (r = serve_frame(e, IO_MS)) == 0;
  while (r == 0 && has_ahead(e));
  if (r == EXIT_CLOSED && !*spoke)
    r = -1; /* a rank that never came: its socket closed unused */
  if (r == 0)
    return true;
  e->ahead->at = e->ahead->len = 0; /* what it left unread goes with it */
  *rc = *rc == EXIT_QUIT && r > 0 ? r : *rc;
  return false;
}

static int by_index(const void *a, const void *b) {
  uint32_t x = ((const struct epoll_event *)a)->data.u32;
  uint32_t y = ((const struct epoll_event *)b)->data.u32;
  return (x > y) - (x < y);
}

/* K ranks' connections in one process, one thread: a frame at a time from
 * whichever connections have one, lowest rank first (a trainer writes a
 * frame whole, and reads the reply to its END at once), until every rank
 * has quit or gone. epoll, not poll: a wait costs what is ready, not K
 * sockets (poll was most of an engine's time at 64 ranks a process). */
static int serve_all(const engine *proto) {
  int k = proto->count, rc = EXIT_QUIT, live = k;
  engine *es = calloc((size_t)k, sizeof *es);
  struct epoll_event *ev = calloc((size_t)k, sizeof *ev);
  bool *spoke = calloc((size_t)k, sizeof *spoke);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (!es || !ev || !spoke || ep < 0) {
    live = 0;
    rc = fatal(proto, EXIT_NOMEM, "out of memory for the connections");
  }
  for (int i = 0; i < live; i++) {
    es[i] = *proto;
    es[i].fd = proto->fd + i;
    es[i].rank = proto->rank + i;
    struct epoll_event add = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, es[i].fd, &add) != 0) {
      live = 0;
      rc = fatal(proto, EXIT_NOMEM, "cannot watch a connection");
    }
  }
  while (live > 0) {
    int n = epoll_wait(ep, ev, k, proto->idle_ms);
    if (n == 0)
      rc = fatal(proto, EXIT_CLOSED, "no frame within the idle limit");
    if (n == 0 || (n < 0 && errno != EINTR))
      break;
    qsort(ev, n < 0 ? 0 : (size_t)n, sizeof *ev, by_index);
    for (int j = 0; j < n; j++) {
      int i = (int)ev[j].data.u32;
      if (serve_ready(&es[i], &spoke[i], &rc))
        continue;
      epoll_ctl(ep, EPOLL_CTL_DEL, es[i].fd, NULL);
      live--;
    }
  }
  for (int i = 0; es && i < k; i++) {
    free(es[i].buf);
    free(es[i].digests);
  }
  if (ep >= 0)
    close(ep);
  free(es);
  free(ev);
  free(spoke);
  return rc;
}

int bs_engine_main(int argc, char **argv) {
  engine e = {0};
  int fd;
  if (argc == 4 && !strcmp(argv[1], "--zygote") && !strcmp(argv[2], "--fd") &&
      bs_num_int(argv[3], 0, INT_MAX, &fd))
    return bs_engine_zygote_serve(fd, bs_engine_main);
  if (parse_args(&e, argc, argv) != 0) {
    fprintf(stderr,
            "usage: engine --fd N --rank R [--count K] [--idle-ms T]\n");
    return EXIT_USAGE;
  }
  if (!(e.ahead = calloc(1, sizeof *e.ahead)))
    return fatal(&e, EXIT_NOMEM, "out of memory for reading ahead");
  int rc = EXIT_QUIT;
  if (e.count > 1) {
    rc = serve_all(&e);
  } else {
    bs_err_set_rank(e.rank);
    rc = serve(&e);
  }
  free(e.buf);
  free(e.digests);
  free(e.ahead);
  return rc;
}
