/* A hasher process and the ring it shares with its caller (bs_hasher.h). */
#include "bs_hasher.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* At most RING_BYTES of staged parts and JOBS parts in flight. The hasher
 * is woken once WAKE_JOBS parts wait, not for each (a wake-up is an
 * interrupt on its CPU); idle, it looks again every IDLE_MS. A drain
 * checks every WAIT_MS that the hasher is alive, and a stop waits
 * STOP_MS for it to end before it kills it. */
#define RING_BYTES ((size_t)16 << 20)
#define JOBS 4096
#define WAKE_JOBS 256
#define IDLE_MS 1000
#define WAIT_MS 100
#define STOP_MS 1000

typedef struct job {
  uint64_t off, len; /* in the ring, counted from its start forever */
  bs_digest d;
  uint32_t ok;
} job;

/* Shared by the caller and the hasher; the counters only grow. */
typedef struct shared {
  _Atomic uint64_t put, hashed;
  _Atomic uint32_t put_seq, hashed_seq; /* the futex words */
  _Atomic uint32_t sleeping, draining, stop;
  job jobs[JOBS];
  char ring[];
} shared;

struct bs_hasher {
  shared *s;
  size_t len; /* of the mapping */
  pid_t pid;  /* -1: ended */
  uint64_t put, reaped;
  uint64_t head, tail, at; /* the ring written to, freed to; the room's next */
  bs_digest **out;         /* part i's digest goes to out[i % JOBS] */
  size_t failed_len;       /* a part that failed to hash (0: none) */
  bool failed;
};

static void wake(_Atomic uint32_t *word) {
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void wait_ms(_Atomic uint32_t *word, uint32_t seen, int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, seen, &ts, NULL, 0);
}

/* ---- the hasher process ---- */

static void hash_one(shared *s, uint64_t i) {
  job *j = &s->jobs[i % JOBS];
  j->ok =
      bs_digest_sha256(s->ring + j->off % RING_BYTES, j->len, &j->d) == BS_OK;
}

/* Sleeps until parts are put (or IDLE_MS pass); set sleeping first, then
 * look, so that a caller putting meanwhile sees it and wakes it. */
static void idle(shared *s, uint64_t next) {
  uint32_t seq = atomic_load(&s->put_seq);
  atomic_store(&s->sleeping, 1);
  if (next >= atomic_load(&s->put) && !atomic_load(&s->stop))
    wait_ms(&s->put_seq, seq, IDLE_MS);
  atomic_store(&s->sleeping, 0);
}

static _Noreturn void serve(shared *s) {
  uint64_t next = atomic_load(&s->hashed);
  for (;;) {
    if (next < atomic_load(&s->put)) {
      hash_one(s, next);
      atomic_store(&s->hashed, ++next);
      atomic_fetch_add(&s->hashed_seq, 1);
      if (atomic_load(&s->draining))
        wake(&s->hashed_seq);
    } else if (atomic_load(&s->stop)) {
      _exit(0);
    } else {
      idle(s, next);
    }
  }
}

/* The child's: killed with its parent, on its CPUs. */
static _Noreturn void child(shared *s, pid_t parent, const cpu_set_t *cpus) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent)
    _exit(0);
  if (cpus)
    sched_setaffinity(0, sizeof *cpus, cpus);
  serve(s);
}

/* ---- the caller ---- */

bs_status bs_hasher_start(const cpu_set_t *cpus, bs_hasher **out) {
  bs_status st = BS_OK;
  bs_hasher *h = calloc(1, sizeof *h);
  *out = NULL;
  if (!h || !(h->out = calloc(JOBS, sizeof *h->out)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "hasher: out of memory");
  h->pid = -1;
  h->len = sizeof(shared) + RING_BYTES;
  h->s = mmap(NULL, h->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
              -1, 0);
  if (h->s == MAP_FAILED) {
    h->s = NULL;
    BS_FAIL(BS_ERR_NOMEM, NULL, "hasher: %zu bytes of shared memory", h->len);
  }
  bs_digest_prepare(); /* in the parent, once: the child inherits it */
  pid_t parent = getpid();
  h->pid = fork();
  if (h->pid == 0)
    child(h->s, parent, cpus);
  if (h->pid < 0)
    BS_FAIL(BS_ERR_NOMEM, NULL, "hasher: no process");
  *out = h;
  h = NULL;
out:
  bs_hasher_stop(h);
  return st;
}

/* True once the hasher has ended: reaped here, or by a reaper of every
 * child (ECHILD). */
static bool gone(bs_hasher *h) {
  pid_t r = h->pid > 0 ? waitpid(h->pid, NULL, WNOHANG) : -1;
  if (r == h->pid || (r < 0 && errno == ECHILD))
    h->pid = -1;
  return h->pid < 0;
}

void bs_hasher_stop(bs_hasher *h) {
  if (!h)
    return;
  if (h->s && h->pid > 0) {
    atomic_store(&h->s->stop, 1);
    wake(&h->s->put_seq);
    for (int ms = 0; ms < STOP_MS && !gone(h); ms++)
      usleep(1000);
    if (!gone(h)) { /* a hasher that does not end is ended */
      kill(h->pid, SIGKILL);
      waitpid(h->pid, NULL, 0);
    }
  }
  if (h->s)
    munmap(h->s, h->len);
  free(h->out);
  free(h);
}

/* The digests of the parts hashed so far to their places, their bytes
 * freed. Touches no error record: a failure waits for the drain. */
static void reap(bs_hasher *h) {
  uint64_t done = atomic_load(&h->s->hashed);
  for (; h->reaped < done; h->reaped++) {
    const job *j = &h->s->jobs[h->reaped % JOBS];
    if (j->ok)
      *h->out[h->reaped % JOBS] = j->d;
    else if (!h->failed) {
      h->failed = true;
      h->failed_len = j->len;
    }
    h->tail = j->off + j->len;
  }
  if (h->reaped == h->put) /* rooms without parts free too */
    h->tail = h->head;
}

void *bs_hasher_room(bs_hasher *h, size_t bytes, size_t parts) {
  reap(h);
  if (bytes > RING_BYTES || parts > JOBS - (h->put - h->reaped))
    return NULL;
  uint64_t at = h->head;
  size_t in = (size_t)(at % RING_BYTES);
  if (bytes > RING_BYTES - in) /* not past the end: from the start */
    at += RING_BYTES - in;
  if (at + bytes - h->tail > RING_BYTES)
    return NULL;
  h->head = at + bytes;
  h->at = at;
  return h->s->ring + at % RING_BYTES;
}

void bs_hasher_put(bs_hasher *h, size_t len, bs_digest *out) {
  shared *s = h->s;
  job *j = &s->jobs[h->put % JOBS];
  j->off = h->at;
  j->len = len;
  j->ok = 0;
  h->out[h->put % JOBS] = out;
  h->at += len;
  atomic_store(&s->put, ++h->put);
  atomic_fetch_add(&s->put_seq, 1);
  if (h->put - atomic_load(&s->hashed) >= WAKE_JOBS &&
      atomic_load(&s->sleeping))
    wake(&s->put_seq);
}

int bs_hasher_pid(const bs_hasher *h) {
  return h ? h->pid : -1;
}

bs_status bs_hasher_drain(bs_hasher *h) {
  bs_status st = BS_OK;
  shared *s = h->s;
  atomic_store(&s->draining, 1);
  wake(&s->put_seq);
  while (atomic_load(&s->hashed) < h->put && !gone(h)) {
    uint32_t seen = atomic_load(&s->hashed_seq);
    if (atomic_load(&s->hashed) < h->put)
      wait_ms(&s->hashed_seq, seen, WAIT_MS);
  }
  atomic_store(&s->draining, 0);
  reap(h);
  if (h->reaped < h->put)
    BS_FAIL(BS_ERR_INTERNAL, NULL,
            "hasher: its process ended with %llu parts not hashed",
            (unsigned long long)(h->put - h->reaped));
  if (h->failed)
    BS_FAIL(BS_ERR_INTERNAL, NULL, "hasher: sha256 of %zu bytes failed",
            h->failed_len);
out:
  h->failed = false;
  return st;
}
