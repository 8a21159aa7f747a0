/* The framed protocol between a trainer rank (bs_engine.c) and its engine
 * process (bs_engine_main.c), over a local SOCK_STREAM socket pair. Both
 * ends are the same binary on the same host: native byte order.
 *
 *   trainer -> engine: BEGIN, TENSOR..., END  (one weight update)
 *                      HELLO                  (the session, re-established)
 *                      RESET                  (a kept engine's next rank)
 *                      QUIT                   (exit 0)
 *   engine -> trainer: REPLY, after END; HELLO, after HELLO; RESET, after
 *                      RESET
 *
 * Every frame is a bs_eframe header followed by `len` payload bytes. */
#ifndef BS_WIRE_H
#define BS_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define BS_ENGINE_MAGIC 0x45545342u /* "BSTE" */
#define BS_ENGINE_FD 3              /* the socket's fd in the engine */
#define BS_ENGINE_NAME_MAX 255      /* tensor name bytes on the wire */

enum {
  BS_EMSG_BEGIN = 1,
  BS_EMSG_TENSOR,
  BS_EMSG_END,
  BS_EMSG_QUIT,
  BS_EMSG_REPLY,
  BS_EMSG_HELLO,
  BS_EMSG_RESET
};

typedef struct bs_eframe {
  uint32_t magic, type;
  uint64_t len; /* payload bytes after this header */
} bs_eframe;

/* BEGIN. flip: the engine/verify fault fired on the trainer; the engine
 * flips bit flip_bit (mod the tensor's bits) of tensor flip_tensor (the
 * last one when the update has fewer) before hashing it. */
typedef struct bs_emsg_begin {
  int64_t cycle;
  uint32_t flip, flip_tensor, flip_bit, pad;
} bs_emsg_begin;

/* TENSOR: this, then name_len name bytes, then nbytes raw bytes. */
typedef struct bs_emsg_tensor {
  uint32_t name_len, dtype;
  uint64_t nbytes;
  uint8_t expected[32]; /* SHA256 the trainer says it sent */
} bs_emsg_tensor;

typedef struct bs_emsg_end {
  uint64_t ntensors; /* sent in this update, for a count check */
} bs_emsg_end;

/* RESET: the engine serves rank from now on, as a fresh one would (an
 * update abandoned dropped); it answers with an empty RESET. */
typedef struct bs_emsg_reset {
  int64_t rank;
} bs_emsg_reset;

/* REPLY: this, then ntensors SHA256 digests of what was received. */
typedef struct bs_emsg_reply {
  uint64_t ntensors, nmismatch, first_bad;
  char first_bad_name[96];
} bs_emsg_reply;

/* Bounded socket I/O: all n bytes, or an errno. Each wait for progress
 * lasts at most timeout_ms (ETIMEDOUT); a closed peer is EPIPE on write and
 * ECONNRESET on read (EOF included); an unreadable buffer is EFAULT. Writes
 * never raise SIGPIPE. */
int bs_wire_write(int fd, const void *buf, size_t n, int timeout_ms);
/* The n pieces of iov in order (iov is used up as it goes): several frames
 * in one send where the socket takes them all. */
int bs_wire_writev(int fd, struct iovec *iov, int n, int timeout_ms);
int bs_wire_read(int fd, void *buf, size_t n, int timeout_ms);
/* What one read brings, 1 to cap bytes (*got), once there is any: for a
 * reader that reads ahead of what it needs. The same bounds and errors. */
int bs_wire_read_some(int fd, void *buf, size_t cap, size_t *got,
                      int timeout_ms);
/* A header followed by a payload (either may be empty), its len counting
 * extra_len bytes the caller writes next. */
int bs_wire_frame(int fd, uint32_t type, const void *payload, size_t len,
                  uint64_t extra_len, int timeout_ms);
/* A whole frame: header, payload and up to BS_WIRE_TAIL_MAX more pieces,
 * in one send where the socket takes them all (each send wakes the peer:
 * a tensor's frame was four). */
#define BS_WIRE_TAIL_MAX 2
int bs_wire_frame_tail(int fd, uint32_t type, const void *payload, size_t len,
                       const struct iovec *tail, int ntail, int timeout_ms);
/* That frame's pieces, its header written into *h, for a caller that
 * sends several frames in one bs_wire_writev: out[0..return) (-1 when
 * ntail is out of range). */
int bs_wire_frame_iov(bs_eframe *h, uint32_t type, const void *payload,
                      size_t len, const struct iovec *tail, int ntail,
                      struct iovec *out);

#endif
