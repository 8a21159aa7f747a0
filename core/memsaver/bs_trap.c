/* Paused-read detection on the host device.
 *
 * A paused allocation is PROT_NONE, so touching it raises SIGSEGV. The
 * handler looks the address up in a process-wide registry of live
 * allocations; on a paused one it logs the read and siglongjmp()s back to
 * the innermost bs_trap_run() of the faulting thread, which returns
 * BS_ERR_PAUSED_READ. Any other fault is handed back to the previous
 * disposition and re-raised, so a real crash still crashes.
 *
 * The handler only does async-signal-safe things: atomic loads and stores,
 * plain copies into preallocated memory, sigaction, raise, siglongjmp. */
#include "memsaver/bs_trap.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bs_limits.h"
#include "bs_task_local.h"

/* Enough for the largest world's ranks with dozens of tensors each (the
 * pages of slots never used cost nothing). */
#define TRAP_SLOTS (BS_WORLD_MAX_RANKS * 64)
#define TRAP_LOG 1024
#define TRAP_ALTSTACK (64 * 1024)

_Static_assert(ATOMIC_POINTER_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2,
               "the signal handler needs lock-free atomics");

/* base is published last (release) and cleared first, so a handler that
 * sees a non-zero base also sees the bytes and tag written before it. */
typedef struct trap_slot {
  _Atomic uintptr_t base; /* 0: free */
  size_t bytes;
  atomic_int state; /* bs_region_state */
  char tag[BS_TAG_MAX];
} trap_slot;

static trap_slot slots[TRAP_SLOTS];
static atomic_size_t slots_hi; /* slots [0, hi) have been used */
static size_t slots_free;      /* under slots_lock: none free below it */
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;

static bs_paused_read trap_log[TRAP_LOG];
static atomic_bool trap_log_ready[TRAP_LOG];
static atomic_size_t trap_log_n;

/* One per bs_trap_run on the thread's stack; the innermost is the target. */
typedef struct trap_frame {
  sigjmp_buf env;
  struct trap_frame *prev;
  bs_paused_read hit;
} trap_frame;

static _Thread_local trap_frame *tls_top;
static _Thread_local int tls_depth;
static _Thread_local void *tls_altstack;
BS_TASK_LOCAL(tls_top, NULL) /* a task's frames are on its own stack */
BS_TASK_LOCAL(tls_depth, NULL)
BS_TASK_LOCAL(tls_altstack, NULL)

static struct sigaction old_segv, old_bus;

static void copy_str(char *dst, const char *src, size_t n) {
  size_t i = 0;
  for (; src && src[i] && i + 1 < n; i++)
    dst[i] = src[i];
  dst[i] = '\0';
}

/* ---- registry (writers hold slots_lock; the handler only reads) ---- */

bs_status bs_trap_register(const void *va, size_t bytes, const char *tag,
                           int *slot) {
  bs_status st = BS_OK;
  size_t i = 0, hi = 0;
  pthread_mutex_lock(&slots_lock);
  hi = atomic_load(&slots_hi);
  i = slots_free; /* thousands of ranks register: no scan from 0 each time */
  while (i < hi && atomic_load_explicit(&slots[i].base, memory_order_relaxed))
    i++;
  if (i == TRAP_SLOTS)
    BS_FAIL(BS_ERR_NOMEM, tag, "memory-saver registry full (%d allocations)",
            TRAP_SLOTS);
  slots[i].bytes = bytes;
  copy_str(slots[i].tag, tag, sizeof slots[i].tag);
  atomic_store(&slots[i].state, BS_ACTIVE);
  atomic_store_explicit(&slots[i].base, (uintptr_t)va, memory_order_release);
  if (i == hi)
    atomic_store(&slots_hi, hi + 1);
  slots_free = i + 1;
  *slot = (int)i;
out:
  pthread_mutex_unlock(&slots_lock);
  return st;
}

void bs_trap_set_state(int slot, bs_region_state s) {
  if (slot >= 0 && slot < TRAP_SLOTS)
    atomic_store(&slots[slot].state, (int)s);
}

void bs_trap_unregister(int slot) {
  if (slot < 0 || slot >= TRAP_SLOTS)
    return;
  pthread_mutex_lock(&slots_lock);
  atomic_store_explicit(&slots[slot].base, 0, memory_order_release);
  if ((size_t)slot < slots_free)
    slots_free = (size_t)slot;
  pthread_mutex_unlock(&slots_lock);
}

/* ---- the log ---- */

static void log_append(const bs_paused_read *r) {
  size_t i = atomic_fetch_add(&trap_log_n, 1);
  if (i >= TRAP_LOG)
    return; /* counted, not kept: the first TRAP_LOG explain enough */
  trap_log[i] = *r;
  atomic_store_explicit(&trap_log_ready[i], true, memory_order_release);
}

size_t bs_trap_count(void) {
  size_t n = atomic_load(&trap_log_n);
  return n < TRAP_LOG ? n : TRAP_LOG;
}

bool bs_trap_get(size_t i, bs_paused_read *out) {
  if (!out || i >= bs_trap_count() ||
      !atomic_load_explicit(&trap_log_ready[i], memory_order_acquire))
    return false;
  *out = trap_log[i];
  return true;
}

/* Only between runs: a handler appending meanwhile would race the reset. */
void bs_trap_reset(void) {
  for (size_t i = 0; i < TRAP_LOG; i++)
    atomic_store(&trap_log_ready[i], false);
  atomic_store(&trap_log_n, 0);
}

/* ---- the handler ---- */

static const trap_slot *find_paused(uintptr_t addr) {
  size_t hi = atomic_load_explicit(&slots_hi, memory_order_acquire);
  for (size_t i = 0; i < hi; i++) {
    uintptr_t base = atomic_load_explicit(&slots[i].base, memory_order_acquire);
    if (base && addr >= base && addr - base < slots[i].bytes)
      return atomic_load(&slots[i].state) == BS_PAUSED ? &slots[i] : NULL;
  }
  return NULL;
}

/* Not ours: put the old disposition back and let the fault happen again
 * (a real fault re-executes; a sent signal has to be raised again). */
static void forward(int sig, const siginfo_t *si) {
  sigaction(sig, sig == SIGBUS ? &old_bus : &old_segv, NULL);
  if (si->si_code <= 0)
    raise(sig);
}

static void trap_handler(int sig, siginfo_t *si, void *uctx) {
  (void)uctx;
  uintptr_t addr = (uintptr_t)si->si_addr;
  const trap_slot *s = find_paused(addr);
  trap_frame *f = tls_top;
  if (!s) {
    forward(sig, si);
    return;
  }
  bs_paused_read r = {.offset = addr - atomic_load(&s->base),
                      .rank = bs_err_rank()};
  copy_str(r.tag, s->tag, sizeof r.tag);
  copy_str(r.phase, bs_err_phase(), sizeof r.phase);
  log_append(&r);
  if (!f) { /* nowhere to unwind to: logged, then a crash */
    forward(sig, si);
    return;
  }
  f->hit = r;
  siglongjmp(f->env, 1);
}

/* Checked on every bs_trap_run, not once: a test harness (CMocka) or a
 * sanitizer may have put its own handler back since. The one we displace
 * becomes the one faults that are not ours go to; never ourselves. */
static bs_status install(void) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static const int sigs[2] = {SIGSEGV, SIGBUS};
  struct sigaction sa, cur;
  bs_status st = BS_OK;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = trap_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  pthread_mutex_lock(&mu);
  for (int i = 0; i < 2; i++) {
    struct sigaction *old = sigs[i] == SIGBUS ? &old_bus : &old_segv;
    if (sigaction(sigs[i], NULL, &cur) != 0)
      BS_FAIL(BS_ERR_INTERNAL, NULL, "trap: cannot read signal %d", sigs[i]);
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == trap_handler)
      continue;
    *old = cur;
    if (sigaction(sigs[i], &sa, NULL) != 0)
      BS_FAIL(BS_ERR_INTERNAL, NULL, "trap: cannot install for signal %d",
              sigs[i]);
  }
out:
  pthread_mutex_unlock(&mu);
  return st;
}

/* ---- bs_trap_run ---- */

/* The handler runs on an alternate stack so that a stack overflow still
 * reaches it (and is forwarded as the crash it is). A stack the thread
 * already has (a sanitizer's) is left alone. */
static bs_status altstack_enter(void) {
  stack_t cur, ss;
  if (tls_depth++ > 0 || sigaltstack(NULL, &cur) != 0 ||
      !(cur.ss_flags & SS_DISABLE))
    return BS_OK;
  ss = (stack_t){.ss_sp = malloc(TRAP_ALTSTACK), .ss_size = TRAP_ALTSTACK};
  if (!ss.ss_sp || sigaltstack(&ss, NULL) != 0) {
    free(ss.ss_sp);
    tls_depth--;
    return bs_err_fail(BS_ERR_NOMEM, NULL, "trap: no alternate signal stack");
  }
  tls_altstack = ss.ss_sp;
  return BS_OK;
}

static void altstack_leave(void) {
  stack_t off = {.ss_flags = SS_DISABLE};
  if (--tls_depth > 0 || !tls_altstack)
    return;
  sigaltstack(&off, NULL);
  free(tls_altstack);
  tls_altstack = NULL;
}

/* sigsetjmp in its own frame: nothing here is modified between the setjmp
 * and a longjmp, so nothing can be clobbered. savesigs=1 restores the
 * signal mask, unblocking SIGSEGV again after an unwind. */
static bs_status call_guarded(trap_frame *f, bs_trap_fn fn, void *arg) {
  if (sigsetjmp(f->env, 1) != 0)
    return BS_ERR_PAUSED_READ;
  tls_top = f;
  return fn(arg);
}

bs_status bs_trap_run(bs_trap_fn fn, void *arg) {
  bs_status st = BS_OK;
  trap_frame frame = {.prev = tls_top};
  if (!fn)
    BS_FAIL(BS_ERR_INVALID, NULL, "trap: no function to run");
  BS_CHECK(install());
  BS_CHECK(altstack_enter());
  st = call_guarded(&frame, fn, arg);
  tls_top = frame.prev;
  altstack_leave();
  /* fn was cut short: its own cleanup did not run, the record says why. */
  if (st == BS_ERR_PAUSED_READ && frame.hit.tag[0])
    st = bs_err_fail(BS_ERR_PAUSED_READ, NULL,
                     "read of paused allocation %s at offset %zu in phase %s",
                     frame.hit.tag, frame.hit.offset, frame.hit.phase);
out:
  return st;
}
