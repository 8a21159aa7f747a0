/* Objects a thread owns (bs_per_thread.h). */
#include "bs_per_thread.h"

#include <stdlib.h>

static pthread_mutex_t keys_mu = PTHREAD_MUTEX_INITIALIZER;

/* The key's destructor gets only the object: its first word leads back to
 * the description, which says how to empty it. */
typedef struct held {
  const bs_per_thread *p;
  max_align_t o[];
} held;

static void drop(void *v) {
  held *h = v;
  if (h->p->fini)
    h->p->fini(h->o);
  free(h);
}

void *bs_per_thread_get(bs_per_thread *p) {
  if (!atomic_load_explicit(&p->made, memory_order_acquire)) {
    pthread_mutex_lock(&keys_mu);
    if (!atomic_load(&p->made) && pthread_key_create(&p->key, drop) == 0)
      atomic_store_explicit(&p->made, true, memory_order_release);
    pthread_mutex_unlock(&keys_mu);
    if (!atomic_load(&p->made))
      return NULL;
  }
  held *h = pthread_getspecific(p->key);
  if (h)
    return h->o;
  if (!(h = calloc(1, sizeof *h + p->size)))
    return NULL;
  h->p = p;
  if (pthread_setspecific(p->key, h) != 0) {
    free(h);
    return NULL;
  }
  return h->o;
}
