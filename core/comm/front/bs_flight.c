#include "comm/front/bs_flight.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bs_buf.h"
#include "bs_clock.h"
#include "bs_json_write.h"
#include "bs_strpool.h"
#include "bs_vec.h"
#include "comm/front/bs_watchdog.h"

enum { RING_FIRST = 32 }; /* entries allocated at first */

/* A string literal appended to a dump. */
#define PUT(b, lit) bs_buf_append((b), (lit), sizeof(lit) - 1)

typedef struct flight_pg {
  int id;
  char name[64], desc[64];
  char *ranks; /* "[1, 3]", as PyTorch writes the list */
} flight_pg;

/* An entry as the ring holds it: 112 bytes where bs_flight_entry takes
 * 192 (a world of 16,384 ranks keeps some 92 entries a rank). Its
 * record_id is its place in the ring; its phase and stand-in name are
 * interned (a few distinct strings among millions of entries). */
typedef struct slot {
  uint64_t collective_seq_id, p2p_seq_id;
  uint64_t input_numel, output_numel;
  uint64_t created_ns, started_ns, completed_ns;
  const char *profiling_name, *label, *name, *phase;
  uint32_t thread_id;
  int32_t pg, me, peer;
  uint8_t input_dtype, output_dtype, state;
  bool has_data, is_p2p;
} slot;

struct bs_flight {
  pthread_mutex_t mu; /* mutable in const readers: see lock() */
  size_t slots;
  uint64_t next_id; /* record_id of the next entry; also how many so far */
  /* Grown as entries come, up to slots (ring_room): a rank's thread of a
   * 16,384-rank world records some 22 to 92 entries of its 8,192 slots. */
  slot *ring;
  size_t cap;
  const char *phase; /* the last entry's, interned: the next one's too */
  flight_pg *pgs;    /* besides the default group */
  int npgs;
  size_t pgs_cap;
};

/* Readers take a const recorder; the lock is the one mutable part. */
static pthread_mutex_t *lock(const bs_flight *f) {
  pthread_mutex_t *mu = (pthread_mutex_t *)&f->mu;
  pthread_mutex_lock(mu);
  return mu;
}

bs_status bs_flight_create(size_t slots, bs_flight **out) {
  bs_status st = BS_OK;
  bs_flight *f = NULL;
  if (slots == 0 || !out)
    BS_FAIL(BS_ERR_INVALID, NULL, "flight recorder: needs at least one slot");
  f = calloc(1, sizeof *f);
  if (f)
    f->cap = slots < RING_FIRST ? slots : RING_FIRST;
  if (!f || !(f->ring = calloc(f->cap, sizeof *f->ring))) {
    free(f);
    f = NULL;
    BS_FAIL(BS_ERR_NOMEM, NULL, "flight recorder: %zu slots", slots);
  }
  f->slots = slots;
  pthread_mutex_init(&f->mu, NULL);
out:
  if (out)
    *out = f;
  return st;
}

void bs_flight_destroy(bs_flight *f) {
  if (!f)
    return;
  pthread_mutex_destroy(&f->mu);
  for (int i = 0; i < f->npgs; i++)
    free(f->pgs[i].ranks);
  free(f->pgs);
  free(f->ring);
  free(f);
}

/* Locked: room for entry next_id. Until the ring is full an entry's slot
 * is its id, so growing moves none; where memory runs out the ring stays
 * as it is and wraps from there (its earliest entries are overwritten, as
 * past slots). */
static void ring_room(bs_flight *f) {
  if (f->next_id < f->cap || f->cap == f->slots)
    return;
  /* By half (not doubled: the last step's room is mostly left empty), and
   * exactly cap (no bs_vec doubling past it): the ring stops at slots. */
  size_t cap = f->cap + f->cap / 2 < f->slots ? f->cap + f->cap / 2 : f->slots;
  if (!bs_vec_grow(&f->ring, NULL, cap, sizeof *f->ring)) {
    f->slots = f->cap;
    return;
  }
  f->cap = cap;
}

/* The process's interned phases and stand-in names: never freed (a few
 * dozen strings), shared by every recorder. */
static bs_strpool *strings;
static pthread_once_t strings_once = PTHREAD_ONCE_INIT;

static void strings_make(void) {
  strings = bs_strpool_create();
}

/* The first n bytes of s (up to its NUL), interned; "" when out of
 * memory: an entry loses a frame's name, not the collective. */
static const char *intern(const char *s, size_t n) {
  size_t k = strnlen(s, n);
  if (k == 0)
    return "";
  pthread_once(&strings_once, strings_make);
  const char *got = strings ? bs_strpool_getn(strings, s, k) : NULL;
  return got ? got : "";
}

/* Locked: the recording thread's phase, as the room of an entry's phase
 * cuts it; interned only when it changed since the last entry. */
static const char *phase_now(bs_flight *f) {
  const char *now = bs_err_phase();
  size_t room = sizeof(((bs_flight_entry *)0)->phase) - 1;
  if (!f->phase || strncmp(f->phase, now, room) != 0 ||
      strlen(f->phase) != strnlen(now, room))
    f->phase = intern(now, room);
  return f->phase;
}

uint64_t bs_flight_record(bs_flight *f, const bs_flight_entry *e) {
  pthread_mutex_t *mu = lock(f);
  ring_room(f);
  uint64_t id = f->next_id++;
  f->ring[id % f->slots] = (slot){
      .collective_seq_id = e->collective_seq_id,
      .p2p_seq_id = e->p2p_seq_id,
      .input_numel = e->input_numel,
      .output_numel = e->output_numel,
      .created_ns = bs_clock_wall_ns(),
      .profiling_name = e->profiling_name,
      .label = e->label,
      .name = intern(e->name, sizeof e->name - 1),
      .phase = phase_now(f),
      .thread_id = (uint32_t)gettid(),
      .pg = e->pg,
      .me = e->me,
      .peer = e->peer,
      .input_dtype = (uint8_t)e->input_dtype,
      .output_dtype = (uint8_t)e->output_dtype,
      .state = BS_FLIGHT_SCHEDULED,
      .has_data = e->has_data,
      .is_p2p = e->is_p2p,
  };
  pthread_mutex_unlock(mu);
  return id;
}

static size_t count_locked(const bs_flight *f) {
  return f->next_id < f->slots ? (size_t)f->next_id : f->slots;
}

/* Locked: the slot of record_id, NULL once the ring has overwritten it. */
static slot *slot_of(const bs_flight *f, uint64_t record_id) {
  if (record_id >= f->next_id || f->next_id - record_id > count_locked(f))
    return NULL;
  return &f->ring[record_id % f->slots];
}

void bs_flight_advance(bs_flight *f, uint64_t record_id, bs_flight_state st) {
  pthread_mutex_t *mu = lock(f);
  slot *s = slot_of(f, record_id);
  if (s) {
    s->state = (uint8_t)st;
    if (st == BS_FLIGHT_STARTED)
      s->started_ns = bs_clock_wall_ns();
    if (st == BS_FLIGHT_COMPLETED)
      s->completed_ns = bs_clock_wall_ns();
  }
  pthread_mutex_unlock(mu);
}

/* "[1, 3]": digit by digit, not printf (every rank of a world of
 * thousands writes its groups of thousands). */
static char *ranks_text(const int *members, int n) {
  bs_buf o = {0};
  PUT(&o, "[");
  for (int i = 0; i < n; i++) {
    if (i)
      PUT(&o, ", ");
    bs_buf_uint(&o, (unsigned)members[i]); /* a rank: never negative */
  }
  PUT(&o, "]");
  return bs_buf_take(&o);
}

bs_status bs_flight_add_pg(bs_flight *f, int id, const char *name,
                           const char *desc, const int *members, int n) {
  bs_status st = BS_OK;
  pthread_mutex_t *mu = lock(f);
  bool room =
      bs_vec_grow(&f->pgs, &f->pgs_cap, (size_t)f->npgs + 1, sizeof *f->pgs);
  char *ranks = room ? ranks_text(members, n) : NULL;
  if (!ranks)
    BS_FAIL(BS_ERR_NOMEM, NULL, "flight recorder: group %s", name);
  flight_pg *g = &f->pgs[f->npgs++];
  *g = (flight_pg){.id = id, .ranks = ranks};
  snprintf(g->name, sizeof g->name, "%s", name);
  snprintf(g->desc, sizeof g->desc, "%s", desc);
out:
  pthread_mutex_unlock(mu);
  return st;
}

/* The recorder's group of id; NULL for the default one. */
static const flight_pg *pg_of(const bs_flight *f, int id) {
  for (int i = 0; id && i < f->npgs; i++)
    if (f->pgs[i].id == id)
      return &f->pgs[i];
  return NULL;
}

size_t bs_flight_count(const bs_flight *f) {
  pthread_mutex_t *mu = lock(f);
  size_t n = count_locked(f);
  pthread_mutex_unlock(mu);
  return n;
}

/* src into dst's n bytes, cut short there as a reader cuts it into its
 * room; not snprintf's "%s": every entry a dump or a reader takes. */
static void cut(char *dst, size_t n, const char *src) {
  size_t k = strnlen(src, n - 1);
  memcpy(dst, src, k);
  dst[k] = '\0';
}

static bool get_locked(const bs_flight *f, size_t i, bs_flight_entry *out) {
  size_t n = count_locked(f);
  if (i >= n)
    return false;
  uint64_t id = f->next_id - n + i;
  const slot *s = &f->ring[id % f->slots];
  *out = (bs_flight_entry){
      .record_id = id,
      .collective_seq_id = s->collective_seq_id,
      .profiling_name = s->profiling_name,
      .label = s->label,
      .thread_id = s->thread_id,
      .has_data = s->has_data,
      .input_numel = s->input_numel,
      .output_numel = s->output_numel,
      .input_dtype = (bs_dtype)s->input_dtype,
      .output_dtype = (bs_dtype)s->output_dtype,
      .state = (bs_flight_state)s->state,
      .time_created_ns = s->created_ns,
      .time_discovered_started_ns = s->started_ns,
      .time_discovered_completed_ns = s->completed_ns,
      .pg = s->pg,
      .p2p_seq_id = s->p2p_seq_id,
      .is_p2p = s->is_p2p,
      .me = s->me,
      .peer = s->peer,
  };
  cut(out->name, sizeof out->name, s->name);
  cut(out->phase, sizeof out->phase, s->phase);
  return true;
}

bool bs_flight_get(const bs_flight *f, size_t i, bs_flight_entry *out) {
  pthread_mutex_t *mu = lock(f);
  bool ok = get_locked(f, i, out);
  pthread_mutex_unlock(mu);
  return ok;
}

const char *bs_flight_state_name(bs_flight_state st) {
  static const char *const names[] = {"scheduled", "started", "completed"};
  return (unsigned)st <= BS_FLIGHT_COMPLETED ? names[st] : "unknown";
}

/* PyTorch's names for the element types, as its dumps print them. */
static const char *torch_dtype(bs_dtype dt) {
  static const char *const names[BS_DTYPE_COUNT] = {
      [BS_BF16] = "BFloat16", [BS_F32] = "Float", [BS_I32] = "Int",
      [BS_I64] = "Long",      [BS_U8] = "Byte",
  };
  return (unsigned)dt < BS_DTYPE_COUNT ? names[dt] : "Undefined";
}

/* ,"key":v with key a literal (PUT's). */
#define PUT_UINT(b, key, v)                                                    \
  do {                                                                         \
    PUT((b), key);                                                             \
    bs_buf_uint((b), (v));                                                     \
  } while (0)

static void put_time(bs_buf *o, const char *key, uint64_t ns) {
  PUT(o, ",\"");
  bs_buf_append(o, key, strlen(key));
  PUT(o, "\":");
  if (ns)
    bs_buf_uint(o, ns);
  else
    PUT(o, "null");
}

static void put_sizes(bs_buf *o, const char *what, const bs_flight_entry *e,
                      size_t numel, bs_dtype dt) {
  size_t n = strlen(what);
  PUT(o, ",\"");
  bs_buf_append(o, what, n);
  PUT(o, "_sizes\":[");
  if (e->has_data) {
    PUT_UINT(o, "[", numel);
    PUT(o, "]");
  }
  PUT(o, "],\"");
  bs_buf_append(o, what, n);
  PUT(o, "_dtypes\":[");
  if (e->has_data)
    bs_json_write_str(o, torch_dtype(dt));
  PUT(o, "]");
}

/* No Python stack here: the frames name where the collective came from,
 * innermost first (the front's own exchange, then the lifecycle phase). */
static void put_frames(bs_buf *o, const bs_flight_entry *e) {
  const char *names[2] = {e->label, e->phase[0] ? e->phase : NULL};
  bool comma = false;
  PUT(o, "\"frames\":[");
  for (int i = 0; i < 2; i++) {
    if (!names[i])
      continue;
    if (comma)
      PUT(o, ",");
    PUT(o, "{\"name\":");
    bs_json_write_str(o, names[i]);
    PUT(o, ",\"filename\":\"backstop\",\"line\":0}");
    comma = true;
  }
  PUT(o, "]");
}

/* The op's name as PyTorch profiles it: a send or recv names the group
 * ranks it goes between. */
static void profiling_name(const bs_flight_entry *e, char *name, size_t n) {
  if (e->is_p2p)
    snprintf(name, n, "%s %d%s%d", e->profiling_name, e->me,
             strstr(e->profiling_name, "send") ? "->" : "<-", e->peer);
  else if (e->name[0])
    snprintf(name, n, "nccl:%s", e->name);
  else
    cut(name, n, e->profiling_name);
}

static void put_profiling_name(bs_buf *o, const bs_flight_entry *e) {
  char name[96];
  profiling_name(e, name, sizeof name);
  bs_json_write_str(o, name);
}

static void put_entry(bs_buf *o, const bs_flight *f, const bs_flight_entry *e,
                      const bs_flight_meta *m) {
  const flight_pg *pg = pg_of(f, e->pg);
  PUT(o, "{");
  put_frames(o, e);
  PUT_UINT(o, ",\"record_id\":", e->record_id);
  PUT(o, ",\"pg_id\":");
  bs_buf_int(o, pg ? pg->id : 0);
  PUT(o, ",\"process_group\":[");
  bs_json_write_str(o, pg ? pg->name : "0");
  PUT(o, ",");
  bs_json_write_str(o, pg ? pg->desc : "default_pg");
  PUT(o, "],\"thread_name\":\"rank ");
  bs_buf_int(o, m->rank);
  PUT_UINT(o, "\",\"thread_id\":\"", e->thread_id);
  PUT_UINT(o, "\",\"collective_seq_id\":", e->collective_seq_id);
  PUT_UINT(o, ",\"p2p_seq_id\":", e->p2p_seq_id);
  PUT_UINT(o, ",\"op_id\":", e->collective_seq_id + e->p2p_seq_id);
  PUT(o, ",\"profiling_name\":");
  put_profiling_name(o, e);
  put_time(o, "time_created_ns", e->time_created_ns);
  if (e->state == BS_FLIGHT_COMPLETED && e->time_discovered_started_ns) {
    PUT(o, ",\"duration_ms\":");
    bs_buf_ms_of_ns(o, e->time_discovered_completed_ns -
                           e->time_discovered_started_ns);
  }
  put_sizes(o, "input", e, e->input_numel, e->input_dtype);
  put_sizes(o, "output", e, e->output_numel, e->output_dtype);
  PUT(o, ",\"state\":");
  bs_json_write_str(o, bs_flight_state_name(e->state));
  put_time(o, "time_discovered_started_ns", e->time_discovered_started_ns);
  put_time(o, "time_discovered_completed_ns", e->time_discovered_completed_ns);
  if (e->state == BS_FLIGHT_COMPLETED)
    PUT(o, ",\"retired\":true,\"timeout_ms\":");
  else
    PUT(o, ",\"retired\":false,\"timeout_ms\":");
  bs_buf_int(o, m->timeout_ms);
  if (e->is_p2p)
    PUT(o, ",\"is_p2p\":true");
  else
    PUT(o, ",\"is_p2p\":false");
  if (e->label) {
    PUT(o, ",\"label\":");
    bs_json_write_str(o, e->label);
  }
  PUT(o, "}");
}

/* The last collective each state reached in group pg, as PyTorch's
 * pg_status (-1: none). */
static void put_pg_status(bs_buf *o, const bs_flight *f, int pg,
                          const char *name) {
  long long last[3] = {-1, -1, -1};
  bs_flight_entry e;
  for (size_t i = 0; get_locked(f, i, &e); i++)
    for (int s = 0; e.pg == pg && !e.is_p2p && s <= (int)e.state && s < 3; s++)
      last[s] = (long long)e.collective_seq_id;
  bs_json_write_str(o, name);
  bs_buf_printf(o,
                ":{\"last_enqueued_collective\":%lld,"
                "\"last_started_collective\":%lld,"
                "\"last_completed_collective\":%lld}",
                last[0], last[1], last[2]);
}

/* Keyed by pg_id, as PyTorch keys it (not by the group's name: a reader
 * takes the status of the group whose entries carry that pg_id). */
static void put_status(bs_buf *o, const bs_flight *f) {
  PUT(o, ",\"pg_status\":{");
  put_pg_status(o, f, 0, "0");
  for (int i = 0; i < f->npgs; i++) {
    char id[16];
    snprintf(id, sizeof id, "%d", f->pgs[i].id);
    PUT(o, ",");
    put_pg_status(o, f, f->pgs[i].id, id);
  }
  PUT(o, "}");
}

static void put_pg(bs_buf *o, const char *name, const char *desc,
                   const char *ranks) {
  bs_json_write_str(o, name);
  PUT(o, ":{\"name\":");
  bs_json_write_str(o, name);
  PUT(o, ",\"desc\":");
  bs_json_write_str(o, desc);
  PUT(o, ",\"ranks\":");
  bs_json_write_str(o, ranks);
  PUT(o, "}");
}

/* "0, 1, ..., size-1", made once for the world's size: every rank's dump
 * holds it, so printing it number by number for each of 16,384 ranks was
 * most of a large run's end. NULL when out of memory. */
static const char *rank_list(int size) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static char *list;
  static int list_size = -1;
  pthread_mutex_lock(&mu);
  if (list_size != size) {
    bs_buf l = {0};
    for (int r = 0; r < size; r++)
      bs_buf_printf(&l, r ? ", %d" : "%d", r);
    char *made = bs_buf_take(&l);
    if (made) {
      free(list);
      list = made;
      list_size = size;
    }
  }
  const char *out = list_size == size ? list : NULL;
  pthread_mutex_unlock(&mu);
  return out;
}

/* The default group's members, as PyTorch writes the list: "[0, 1, ...]". */
static void put_world(bs_buf *o, int size) {
  const char *list = rank_list(size);
  PUT(o, "[");
  if (list)
    bs_buf_append(o, list, strlen(list));
  for (int r = 0; !list && r < size; r++)
    bs_buf_printf(o, r ? ", %d" : "%d", r);
  PUT(o, "]");
}

#define DEFAULT_PG                                                             \
  ",\"pg_config\":{\"0\":{\"name\":\"0\",\"desc\":\"default_pg\",\"ranks\":\""

/* Every process group of the rank: the default one (every rank of the
 * world, or its mark), then those it made, the ranks as PyTorch writes the
 * list (a string). */
static void put_pg_config(bs_buf *o, const bs_flight *f, int size, bool mark) {
  PUT(o, DEFAULT_PG);
  if (mark)
    PUT(o, BS_FLIGHT_WORLD);
  else
    put_world(o, size);
  PUT(o, "\"}");
  for (int i = 0; i < f->npgs; i++) {
    PUT(o, ",");
    put_pg(o, f->pgs[i].name, f->pgs[i].desc, f->pgs[i].ranks);
  }
  PUT(o, "}");
}

/* "[128] BFloat16 -> [512] BFloat16" (a barrier: " -> "): an entry's
 * sizes and dtypes as a reader joins its dump's four lists. */
static void shape_of(const bs_flight_entry *e, char *out, size_t n) {
  if (e->has_data)
    snprintf(out, n, "[%zu] %s -> [%zu] %s", e->input_numel,
             torch_dtype(e->input_dtype), e->output_numel,
             torch_dtype(e->output_dtype));
  else
    snprintf(out, n, " -> ");
}

static double ns_to_ms(uint64_t ns) {
  return ns ? (double)ns / 1e6 : -1;
}

/* Entry e as a reader takes it from its JSON (put_entry): the outermost
 * frame is the phase, else the label (put_frames). */
static void coll_of(const bs_flight_entry *e, bs_coll_rec *c) {
  char name[96];
  const char *label = e->label ? e->label : "";
  memset(c, 0, sizeof *c);
  c->seq = (long)e->collective_seq_id;
  profiling_name(e, name, sizeof name);
  cut(c->op, sizeof c->op, name);
  cut(c->label, sizeof c->label, label);
  cut(c->state, sizeof c->state, bs_flight_state_name(e->state));
  shape_of(e, c->shape, sizeof c->shape);
  cut(c->phase, sizeof c->phase, e->phase[0] ? e->phase : label);
  c->t_created_ms = ns_to_ms(e->time_created_ns);
  c->t_started_ms = ns_to_ms(e->time_discovered_started_ns);
  c->t_completed_ms = ns_to_ms(e->time_discovered_completed_ns);
}

bs_status bs_flight_colls(const bs_flight *f, bs_coll_rec **out, size_t *n) {
  bs_status st = BS_OK;
  pthread_mutex_t *mu = lock(f);
  size_t count = count_locked(f);
  bs_flight_entry e;
  *n = 0;
  if (!(*out = calloc(count ? count : 1, sizeof **out)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "flight recorder: %zu collectives", count);
  for (; *n < count && get_locked(f, *n, &e); ++*n)
    coll_of(&e, &(*out)[*n]);
out:
  pthread_mutex_unlock(mu);
  return st;
}

char *bs_flight_json(const bs_flight *f, const bs_flight_meta *m) {
  bs_buf o = {0};
  bs_buf_printf(&o,
                "{\"version\":\"2.10\",\"rank\":%d,\"comm_size\":%d,"
                "\"backend\":",
                m->rank, m->size);
  bs_json_write_str(&o, m->backend ? m->backend : "");
  PUT(&o, ",\"comm_lib_version\":");
  bs_json_write_str(&o, m->comm_lib_version ? m->comm_lib_version
                        : m->backend        ? m->backend
                                            : "");
  pthread_mutex_t *mu = lock(f);
  put_pg_config(&o, f, m->size, m->world_marked);
  put_status(&o, f);
  PUT(&o, ",\"entries\":[");
  bs_flight_entry e;
  for (size_t i = 0; get_locked(f, i, &e); i++) {
    if (i)
      PUT(&o, ",");
    put_entry(&o, f, &e, m);
  }
  pthread_mutex_unlock(mu);
  PUT(&o, "]}\n");
  return bs_buf_take(&o);
}

/* The world's size from a dump this recorder wrote (its "comm_size" is
 * ours, a plain decimal: not user input, so no bs_num). */
static int dump_size(const char *size_at) {
  return atoi(size_at + strlen("\"comm_size\":"));
}

char *bs_flight_json_expand(const char *json) {
  const char *at = strstr(json, DEFAULT_PG BS_FLIGHT_WORLD "\"");
  const char *size_at = strstr(json, "\"comm_size\":");
  if (!at || !size_at)
    return strdup(json);
  bs_buf o = {0};
  size_t head = (size_t)(at - json) + strlen(DEFAULT_PG);
  bs_buf_append(&o, json, head);
  put_world(&o, dump_size(size_at));
  const char *rest = json + head + strlen(BS_FLIGHT_WORLD);
  bs_buf_append(&o, rest, strlen(rest));
  return bs_buf_take(&o);
}
