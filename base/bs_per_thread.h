/* An object a thread owns, made on its first use and freed with the thread
 * (a pthread key's destructor): for scratch that every caller on a thread
 * shares. A scheduled world's ranks are fibers of one thread and never
 * hand their turn over inside such a call, so they share it too. */
#ifndef BS_PER_THREAD_H
#define BS_PER_THREAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct bs_per_thread {
  size_t size;           /* bytes of the object, zeroed when made */
  void (*fini)(void *o); /* frees what the object holds (not o itself) */
  pthread_key_t key;
  _Atomic bool made; /* the key exists */
} bs_per_thread;

#define BS_PER_THREAD(size, fini)                                              \
  { (size), (fini), 0, false }

/* The calling thread's object; NULL when memory ran out. */
void *bs_per_thread_get(bs_per_thread *p);

#endif
