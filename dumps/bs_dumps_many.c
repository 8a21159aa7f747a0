/* Many dumps at once (bs_dumps_many.h): workers take the next item from a
 * counter, read it, then wait for its turn to hand it over; the calling
 * thread is one of them. Each has its own document, reader and view of
 * the folder's string pool; the folder's model is touched only in turn. */
#include "bs_dumps_many.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bs_dval.h"
#include "bs_pickle.h"
#include "bs_strpool.h"

/* Readers at most: reading is memory-bound past a few cores. */
#define MAX_WORKERS 8

typedef struct shared {
  const bs_dumps_many *m;
  bs_dumps *d;
  atomic_size_t next; /* the next item to read */
  size_t turn;        /* the next item to hand over */
  bool stop;
  bs_status st; /* the first failure, in item order */
  bs_error err;
  pthread_mutex_t mu;
  pthread_cond_t cv;
} shared;

typedef struct worker {
  shared *s;
  bs_strpool *pool; /* a view of the folder's */
  bs_dumps_reader rd;
  pthread_t t;
} worker;

static void parse(worker *w, bs_dumps_many_item *it) {
  bs_json j = {0};
  bs_dval *root = NULL;
  bs_dval_reset(&w->rd.doc);
  if (it->pickle) {
    it->parsed =
        bs_pickle_read_doc(it->data, it->len, w->pool, &w->rd.doc, &root);
  } else if ((it->parsed = bs_json_parse(it->data, it->len, &j)) == BS_OK) {
    it->parsed = bs_dval_from_json(&j, w->pool, &w->rd.doc, &root);
    bs_json_free(&j);
  }
  if (it->parsed == BS_OK) {
    it->root = root;
    it->prepped = bs_dumps_prepare(w->pool, &w->rd, root, it->name, &it->prep);
  }
  if (it->parsed != BS_OK || it->prepped != BS_OK)
    it->err = *bs_err();
  bs_err_clear();
}

static bool await_turn(shared *s, size_t i) {
  pthread_mutex_lock(&s->mu);
  while (s->turn != i && !s->stop)
    pthread_cond_wait(&s->cv, &s->mu);
  bool go = !s->stop;
  pthread_mutex_unlock(&s->mu);
  return go;
}

static void end_turn(shared *s, bs_status st) {
  pthread_mutex_lock(&s->mu);
  if (st != BS_OK && !s->stop) {
    s->stop = true;
    s->st = st;
    s->err = *bs_err();
  }
  s->turn++;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

static void *work(void *arg) {
  worker *w = arg;
  shared *s = w->s;
  for (;;) {
    size_t i = atomic_fetch_add(&s->next, 1);
    if (i >= s->m->n)
      break;
    bs_dumps_many_item it = {.i = i};
    bs_status st = s->m->get(s->m->ctx, &it);
    if (st == BS_OK && it.data && it.len)
      parse(w, &it);
    bool go = await_turn(s, i);
    if (go && st == BS_OK)
      st = s->m->take(s->m->ctx, s->d, &it);
    if (go)
      end_turn(s, st);
    bs_dumps_prep_free(&it.prep);
    free(it.owned);
    if (!go)
      break;
  }
  return NULL;
}

static size_t workers_for(size_t n) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  size_t k = cpus > 1 ? (size_t)cpus : 1;
  k = k < MAX_WORKERS ? k : MAX_WORKERS;
  return k < n ? k : (n ? n : 1);
}

bs_status bs_dumps_many_read(bs_dumps *d, const bs_dumps_many *m) {
  bs_status st = BS_OK;
  worker w[MAX_WORKERS] = {0};
  size_t k = 0, nw = workers_for(m->n), started = 1;
  shared s = {.m = m, .d = d};
  atomic_init(&s.next, 0);
  pthread_mutex_init(&s.mu, NULL);
  pthread_cond_init(&s.cv, NULL);
  BS_CHECK(bs_dumps_start(d));
  for (k = 0; k < nw; k++) {
    w[k].s = &s;
    if (!(w[k].pool = bs_strpool_view(d->pool)))
      BS_FAIL(BS_ERR_NOMEM, NULL, "dumps: out of memory");
    BS_CHECK(bs_dumps_reader_init(&w[k].rd, w[k].pool));
  }
  /* Fewer threads than asked still read every item. */
  while (started < nw &&
         !pthread_create(&w[started].t, NULL, work, &w[started]))
    started++;
  work(&w[0]);
  for (size_t i = 1; i < started; i++)
    pthread_join(w[i].t, NULL);
  if ((st = s.st) != BS_OK)
    *bs_err() = s.err;
out:
  for (size_t i = 0; i < nw; i++) {
    bs_dval_doc_free(&w[i].rd.doc);
    bs_strpool_destroy(w[i].pool);
  }
  pthread_cond_destroy(&s.cv);
  pthread_mutex_destroy(&s.mu);
  return st;
}

bs_status bs_dumps_many_add(bs_dumps *d, bs_dumps_many_item *it) {
  bs_status st = it->parsed != BS_OK ? it->parsed : it->prepped;
  if (st != BS_OK) {
    *bs_err() = it->err;
    return st;
  }
  return bs_dumps_commit(d, it->root, &it->prep);
}
