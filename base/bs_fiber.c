/* Fibers on ucontext (bs_fiber.h), with the sanitizers' fiber hooks.
 * Fibers jump between stacks, which fortify's longjmp check takes for a
 * jump into a frame that is gone. */
#undef _FORTIFY_SOURCE
#include "bs_fiber.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_task_local.h"

#if defined(__SANITIZE_ADDRESS__)
#define BS_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BS_FIBER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define BS_FIBER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BS_FIBER_TSAN 1
#endif
#endif

#ifdef BS_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef BS_FIBER_TSAN
#include <sanitizer/tsan_interface.h>
#endif

/* Past a fiber's first run, a switch is _setjmp and _longjmp: swapcontext
 * also saves and sets the signal mask, a system call each switch (4% of a
 * 16,384-rank world), and the fibers of a thread share one mask. The
 * sanitizers keep swapcontext, the switch their fiber hooks are made for. */
#if defined(BS_FIBER_ASAN) || defined(BS_FIBER_TSAN)
#define BS_FIBER_JMP 0
#else
#define BS_FIBER_JMP 1
#endif

/* The fiber being left, on its thread: its stack is what the next
 * fiber's finish learns when it is the thread's own. */
static _Thread_local bs_fiber *leaving;

/* ASan: the stack about to run (fake: where the one leaving keeps its fake
 * stack; NULL: it leaves for good). TSan: the fiber about to run. */
static void before(bs_fiber *from, bs_fiber *to, bool exiting) {
  bs_task_local_save(from->locals);
  bs_task_local_load(to->locals);
  leaving = from;
#ifdef BS_FIBER_ASAN
  __sanitizer_start_switch_fiber(exiting ? NULL : &from->fake, to->bottom,
                                 to->size);
#else
  (void)exiting;
#endif
#ifdef BS_FIBER_TSAN
  __tsan_switch_to_fiber(to->tsan, 0);
#endif
}

/* On the fiber now running (fake: its own, NULL on its first run). */
static void after(void *fake) {
#ifdef BS_FIBER_ASAN
  const void *bottom = NULL;
  size_t size = 0;
  __sanitizer_finish_switch_fiber(fake, &bottom, &size);
  if (leaving && !leaving->made && !leaving->size) {
    leaving->bottom = bottom;
    leaving->size = size;
  }
#else
  (void)fake;
#endif
}

void bs_fiber_thread(bs_fiber *f, void *locals) {
  memset(f, 0, sizeof *f);
  f->locals = locals;
#ifdef BS_FIBER_TSAN
  f->tsan = __tsan_get_current_fiber();
#endif
}

bool bs_fiber_make(bs_fiber *f, void *stack, size_t size, void (*entry)(void),
                   void *locals) {
  memset(f, 0, sizeof *f);
  if (getcontext(&f->uc) != 0)
    return false;
  f->uc.uc_stack.ss_sp = stack;
  f->uc.uc_stack.ss_size = size;
  f->uc.uc_link = NULL;
  makecontext(&f->uc, entry, 0);
  f->locals = locals;
  f->bottom = stack;
  f->size = size;
  f->made = true;
  bs_task_local_init(locals);
#ifdef BS_FIBER_TSAN
  f->tsan = __tsan_create_fiber(0);
#endif
  return true;
}

void bs_fiber_started(void) {
  after(NULL);
}

/* To `to`: where it saved itself, or its start on its first run. */
static _Noreturn void jump(bs_fiber *to) {
#if BS_FIBER_JMP
  if (to->saved)
    _longjmp(to->jb, 1);
#endif
  setcontext(&to->uc);
  fprintf(stderr, "backstop: fiber switch failed\n");
  abort();
}

void bs_fiber_switch(bs_fiber *from, bs_fiber *to) {
  before(from, to, false);
#if BS_FIBER_JMP
  from->saved = true;
  if (_setjmp(from->jb) == 0)
    jump(to);
#else
  if (swapcontext(&from->uc, &to->uc) != 0) {
    fprintf(stderr, "backstop: fiber switch failed\n");
    abort();
  }
#endif
  after(from->fake);
}

_Noreturn void bs_fiber_exit(bs_fiber *from, bs_fiber *to) {
  before(from, to, true);
  jump(to);
}

void bs_fiber_destroy(bs_fiber *f) {
#ifdef BS_FIBER_TSAN
  if (f->made && f->tsan)
    __tsan_destroy_fiber(f->tsan);
  f->tsan = NULL;
#else
  (void)f;
#endif
}
