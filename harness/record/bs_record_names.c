#include "record/bs_record_names.h"

#include <pthread.h>

#include "bs_strpool.h"

static bs_strpool *pool;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void make(void) {
  pool = bs_strpool_create();
}

const char *bs_record_names_intern(const char *name) {
  pthread_once(&once, make);
  return pool ? bs_strpool_get(pool, name) : NULL;
}
