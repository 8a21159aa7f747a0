/* Thread-local state that belongs to a task, not to its thread: a
 * scheduler that runs several tasks on one thread as fibers (bs_sched.h)
 * swaps it at every switch, so that each task sees its own error record,
 * phase, rank, clock reads, fault cycle and trap frames as a thread of
 * its own would (a fault hit's context lives within one call, which no
 * switch cuts: bs_fault.c). A module registers each such variable once, at load
 * time (BS_TASK_LOCAL), with the value a new thread starts it with. */
#ifndef BS_TASK_LOCAL_H
#define BS_TASK_LOCAL_H

#include <stddef.h>

typedef struct bs_task_local {
  void *(*addr)(void); /* the calling thread's variable */
  size_t size;
  const void *init; /* its value on a new thread (NULL: zeroes) */
} bs_task_local;

void bs_task_local_add(const bs_task_local *l);

/* Bytes a task's copy of every variable takes. */
size_t bs_task_local_bytes(void);
/* A new task's copy (every variable at its init), into `to`. */
void bs_task_local_init(void *to);
/* The calling thread's variables into `to`, and back from `from`. */
void bs_task_local_save(void *to);
void bs_task_local_load(const void *from);

/* Registers the thread-local `var` (of this file), whose new-thread value
 * is *init_ptr (NULL: zeroes), before main runs. */
#define BS_TASK_LOCAL(var, init_ptr)                                           \
  static void *var##_addr(void) {                                              \
    return (void *)&var;                                                       \
  }                                                                            \
  __attribute__((constructor)) static void var##_register(void) {              \
    static const bs_task_local l = {var##_addr, sizeof var, init_ptr};         \
    bs_task_local_add(&l);                                                     \
  }

#endif
