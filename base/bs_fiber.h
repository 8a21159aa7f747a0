/* Fibers: tasks that take turns on one thread, each on a stack of its
 * own, switched in user space (ucontext). A switch between two threads
 * costs the kernel two futex calls and a context switch (6 us at 4096
 * threads on the 2-core VM, a fifth of a 16,384-rank run); between two
 * fibers it costs some tens of ns (bs_fiber.c). A switch also swaps the tasks'
 * thread-local state (bs_task_local.h) and tells the sanitizers: ASan
 * which stack runs, TSan which fiber. */
#ifndef BS_FIBER_H
#define BS_FIBER_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <ucontext.h>

typedef struct bs_fiber {
  ucontext_t uc; /* its start, until its first run */
  jmp_buf jb;    /* where it waits, once saved */
  bool saved;
  void *locals; /* its task-local state while it does not run */
  void *fake;   /* ASan: its fake stack while it does not run */
  const void *bottom;
  size_t size; /* its stack; the thread's own: learnt when it switches */
  void *tsan;  /* TSan's fiber */
  bool made;   /* bs_fiber_make's, not the thread's own */
} bs_fiber;

/* The calling thread's own context, as the fiber it switches from first;
 * locals: where its task-local state waits (bs_task_local_bytes). */
void bs_fiber_thread(bs_fiber *f, void *locals);
/* A fiber that runs entry() on [stack, stack + size) when first switched
 * to, with its task-locals at their start (locals: as above); entry calls
 * bs_fiber_started first and never returns (it exits). false: ucontext
 * failed. */
bool bs_fiber_make(bs_fiber *f, void *stack, size_t size, void (*entry)(void),
                   void *locals);
/* First, in a fiber's entry: the switch to it is complete. */
void bs_fiber_started(void);
/* From the running fiber `from` to `to`: returns when something switches
 * back to `from`. */
void bs_fiber_switch(bs_fiber *from, bs_fiber *to);
/* From the running fiber, for good, to `to`. */
_Noreturn void bs_fiber_exit(bs_fiber *from, bs_fiber *to);
/* What a made fiber holds beyond its stack (TSan's), once it exited or
 * never ran. */
void bs_fiber_destroy(bs_fiber *f);

#endif
