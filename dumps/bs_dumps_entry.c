/* One Flight Recorder entry as the model's op, and a rank's entries folded
 * into coalesced ops. Where versions and backends write a field
 * differently (a seq as collective_seq_id or seq_id, a time as null or 0,
 * pg_status as numbers or strings, no is_p2p before 2.3) every form is
 * read. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_buf.h"
#include "bs_dumps_int.h"
#include "bs_dval.h"
#include "bs_num.h"
#include "bs_strpool.h"

static const char *keep_str(bs_strpool *pool, const char *text, bool *oom) {
  const char *s = bs_strpool_get(pool, text);
  *oom = *oom || !s;
  return s ? s : "";
}

/* Interns the buffer's text (and empties it). */
static const char *keep(bs_strpool *pool, bs_buf *b, bool *oom) {
  const char *s = bs_strpool_get(pool, bs_buf_str(b));
  *oom = *oom || !s || b->oom;
  b->len = 0;
  if (b->s)
    b->s[0] = '\0';
  return s ? s : "";
}

/* The sizes list of more tensors than sizes() has room for. */
static void sizes_long(const bs_dval *v, bs_buf *b) {
  bs_buf_printf(b, "[");
  for (size_t i = 0; i < bs_dval_len(v); i++) {
    const bs_dval *t = bs_dval_item(v, i);
    bs_buf_printf(b, "%s[", i ? ", " : "");
    for (size_t j = 0; j < bs_dval_len(t); j++)
      bs_buf_printf(b, "%s%lld", j ? ", " : "",
                    (long long)bs_dval_int(bs_dval_item(t, j), 0));
    bs_buf_printf(b, "]");
  }
  bs_buf_printf(b, "]");
}

/* Appends text (thousands of dumps: no printf per number). */
static void put(char *buf, size_t n, size_t *len, const char *text) {
  size_t k = strlen(text);
  if (*len + k < n)
    memcpy(buf + *len, text, k + 1);
  *len += k;
}

static void put_int(char *buf, size_t n, size_t *len, int64_t x) {
  char digits[24], *p = digits + sizeof digits - 1;
  uint64_t u = x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;
  *p = '\0';
  do
    *--p = (char)('0' + u % 10);
  while ((u /= 10) && p > digits + 1);
  if (x < 0)
    *--p = '-';
  put(buf, n, len, p);
}

/* "[[56974]]", the element count and the tensors of a sizes list. */
static const char *sizes(bs_strpool *pool, const bs_dval *v, bs_buf *b,
                         uint64_t *numel, int *ntens, bool *oom) {
  char buf[512];
  size_t len = 0;
  *numel = 0;
  *ntens = 0;
  put(buf, sizeof buf, &len, "[");
  for (size_t i = 0; i < bs_dval_len(v); i++) {
    const bs_dval *t = bs_dval_item(v, i);
    uint64_t p = 1;
    put(buf, sizeof buf, &len, i ? ", [" : "[");
    for (size_t j = 0; j < bs_dval_len(t); j++) {
      int64_t x = bs_dval_int(bs_dval_item(t, j), 0);
      if (j)
        put(buf, sizeof buf, &len, ", ");
      put_int(buf, sizeof buf, &len, x);
      p *= x > 0 ? (uint64_t)x : 0;
    }
    put(buf, sizeof buf, &len, "]");
    *numel += p;
    (*ntens)++;
  }
  put(buf, sizeof buf, &len, "]");
  if (len < sizeof buf)
    return keep_str(pool, buf, oom);
  sizes_long(v, b); /* longer than the buffer: the slow way */
  return keep(pool, b, oom);
}

static const char *dtypes(bs_strpool *pool, const bs_dval *v, bs_buf *b,
                          bool *oom) {
  char buf[512];
  size_t len = 0;
  buf[0] = '\0';
  if (bs_dval_len(v) == 1 && v->kids[0]->kind == BS_DV_STR)
    return v->kids[0]->s; /* interned already */
  for (size_t i = 0; i < bs_dval_len(v); i++)
    if (v->kids[i]->kind == BS_DV_STR) {
      put(buf, sizeof buf, &len, len ? ", " : "");
      put(buf, sizeof buf, &len, v->kids[i]->s);
    }
  if (len < sizeof buf)
    return keep_str(pool, buf, oom);
  for (size_t i = 0; i < bs_dval_len(v); i++)
    if (v->kids[i]->kind == BS_DV_STR)
      bs_buf_printf(b, "%s%s", b->len ? ", " : "", v->kids[i]->s);
  return keep(pool, b, oom);
}

/* The innermost frame outside torch's own package (the job's call site),
 * else the innermost. */
static const bs_dval *call_site(bs_dumps_reader *rd, const bs_dval *frames) {
  for (size_t i = 0; i < bs_dval_len(frames); i++) {
    const bs_dval *f = bs_dval_item(frames, i);
    const char *file =
        bs_dval_str(bs_dval_find(f, rd->key[BS_DK_FRAME_FILE]), "");
    if (!strstr(file, "/torch/"))
      return f;
  }
  return bs_dval_item(frames, 0);
}

/* "train_step at train.py:38" of the call site; the last one made is
 * kept (an op issued from one place has one). */
static const char *frame(bs_strpool *pool, bs_dumps_reader *rd,
                         const bs_dval *frames, bs_buf *b, bool *oom) {
  const bs_dval *top = call_site(rd, frames);
  if (!top)
    return keep_str(pool, "", oom);
  const char *name =
      bs_dval_str(bs_dval_find(top, rd->key[BS_DK_FRAME_NAME]), "?");
  const char *file =
      bs_dval_str(bs_dval_find(top, rd->key[BS_DK_FRAME_FILE]), "?");
  int64_t line = bs_dval_int(bs_dval_find(top, rd->key[BS_DK_FRAME_LINE]), 0);
  if (rd->frame && rd->frame_name == name && rd->frame_file == file &&
      rd->frame_line == line)
    return rd->frame;
  bs_buf_printf(b, "%s at %s:%lld", name, file, (long long)line);
  rd->frame = keep(pool, b, oom);
  rd->frame_name = name;
  rd->frame_file = file;
  rd->frame_line = line;
  return rd->frame;
}

/* A time in ns: null, 0 and anything not a positive integer are none. */
static uint64_t ns_of(const bs_dval *v) {
  int64_t x = bs_dval_int(v, 0);
  return x > 0 ? (uint64_t)x : 0;
}

/* The peer's group rank after an arrow; -1 for none, "?" (any source) or
 * another text. */
static int peer_of(const char *arrow) {
  int peer;
  return arrow && bs_num_int(arrow + 2, 0, INT_MAX, &peer) ? peer : -1;
}

/* The op, its kind and (p2p) the peer's group rank from " 1->2" or
 * " 3<-0" ("?": any source). */
static const char *op_of(bs_strpool *pool, const char *name, bs_dump_coll *c,
                         bool *oom) {
  char buf[128];
  const char *op = bs_dumps_op_name(name);
  size_t len = strcspn(op, " ");
  const char *meta = op + len + (op[len] == ' ');
  size_t k = len < sizeof buf - 1 ? len : sizeof buf - 1;
  memcpy(buf, op, k);
  buf[k] = '\0';
  c->kind = BS_DUMP_COLL;
  c->peer = -1;
  if (len == 4 && !strncmp(op, "send", 4)) {
    c->kind = BS_DUMP_SEND;
    c->peer = peer_of(strstr(meta, "->"));
  } else if (len == 4 && !strncmp(op, "recv", 4)) {
    c->kind = BS_DUMP_RECV;
    c->peer = peer_of(strstr(meta, "<-"));
  }
  return keep_str(pool, buf, oom);
}

/* Done, running or waiting, from every field that says so: gloo (torch
 * 2.15) writes every entry `scheduled` and no times, its done ones
 * `retired`; pg_status counts collectives (not p2p ops). */
static bs_dump_state state_of(const bs_dval *const *f, const bs_dump_coll *c,
                              const bs_dumps_status *st) {
  const char *s = bs_dval_str(f[BS_DK_STATE], "scheduled");
  bool coll = c->kind == BS_DUMP_COLL;
  int64_t seq = (int64_t)c->cseq;
  if (!strcmp(s, "completed") || bs_dval_bool(f[BS_DK_RETIRED], false) ||
      c->completed_ns || c->duration_ms >= 0 ||
      (coll && st && st->completed >= seq))
    return BS_DUMP_COMPLETED;
  if (!strcmp(s, "started") || c->started_ns ||
      (coll && st && st->started >= seq))
    return BS_DUMP_STARTED;
  return BS_DUMP_SCHEDULED;
}

static int64_t seq_of(const bs_dval *const *f) {
  int64_t v = bs_dval_int(f[BS_DK_COLLECTIVE_SEQ_ID], -1);
  return v >= 0 ? v : bs_dval_int(f[BS_DK_SEQ_ID], 0);
}

/* The index of interned key k, at place `place` of its entry; -1 when
 * not read. */
static int key_index(bs_dumps_reader *rd, const char *k, size_t place) {
  bool remembered = place < BS_DUMPS_KEY_PLACES;
  if (remembered && rd->seen[place] == k)
    return rd->seen_at[place];
  int at = -1;
  for (int j = 0; j < BS_DK_COUNT && at < 0; j++)
    if (rd->key[j] == k)
      at = j;
  if (remembered) {
    rd->seen[place] = k;
    rd->seen_at[place] = at;
  }
  return at;
}

void bs_dumps_entry_fields(bs_dumps_reader *rd, const bs_dval *e,
                           const bs_dval **f) {
  memset(f, 0, BS_DK_COUNT * sizeof *f);
  for (size_t i = 0; e && e->kind == BS_DV_DICT && i + 1 < e->n; i += 2) {
    const char *k = e->kids[i]->kind == BS_DV_STR ? e->kids[i]->s : NULL;
    int j = k ? key_index(rd, k, i / 2) : -1;
    if (j >= 0 && !f[j])
      f[j] = e->kids[i + 1]; /* the first, as JSON's */
  }
}

void bs_dumps_entry_read(bs_strpool *pool, bs_dumps_reader *rd,
                         const bs_dval *const *f, const bs_dumps_status *st,
                         bs_dump_coll *c, bool *oom) {
  bs_buf b = {0};
  double dur = -1;
  memset(c, 0, sizeof *c);
  c->op = op_of(pool, bs_dval_str(f[BS_DK_PROFILING_NAME], "?"), c, oom);
  /* is_p2p, where written, says it (a batch's end marker is p2p too);
   * before 2.3 the name does. */
  const bs_dval *is_p2p = f[BS_DK_IS_P2P];
  c->p2p = is_p2p && is_p2p->kind == BS_DV_BOOL ? is_p2p->b
                                                : c->kind != BS_DUMP_COLL;
  c->cseq = (uint64_t)seq_of(f);
  /* ProcessGroupNCCL ends a batch_isend_irecv with "nccl:coalesced" of
   * is_p2p false, collective_seq_id 0 and the batch's p2p_seq_id: the
   * batch's own marker (a collective's seq is never 0), which holds its
   * state (the sends and receives stay "scheduled"). */
  if (!c->p2p && c->cseq == 0 && strstr(c->op, "coalesced") &&
      bs_dval_int(f[BS_DK_P2P_SEQ_ID], 0) > 0)
    c->p2p = true;
  if (!c->p2p)
    c->kind = BS_DUMP_COLL;
  c->seq = c->p2p ? (uint64_t)bs_dval_int(f[BS_DK_P2P_SEQ_ID], 0) : c->cseq;
  c->in =
      sizes(pool, f[BS_DK_INPUT_SIZES], &b, &c->in_numel, &c->in_tensors, oom);
  c->out = sizes(pool, f[BS_DK_OUTPUT_SIZES], &b, &c->out_numel,
                 &c->out_tensors, oom);
  c->in_dt = dtypes(pool, f[BS_DK_INPUT_DTYPES], &b, oom);
  c->out_dt = dtypes(pool, f[BS_DK_OUTPUT_DTYPES], &b, oom);
  c->label = bs_dval_str(f[BS_DK_LABEL], NULL);
  c->label = c->label ? c->label : keep_str(pool, "", oom);
  c->frame = frame(pool, rd, f[BS_DK_FRAMES], &b, oom);
  c->duration_ms = bs_dval_num(f[BS_DK_DURATION_MS], &dur) ? dur : -1;
  c->created_ns = ns_of(f[BS_DK_TIME_CREATED_NS]);
  c->started_ns = ns_of(f[BS_DK_STARTED_NS]);
  c->completed_ns = ns_of(f[BS_DK_COMPLETED_NS]);
  c->state = state_of(f, c, st);
  c->coalesced = strstr(c->op, "coalesced") != NULL;
  bs_buf_free(&b);
}

/* ---- coalesced ops ---- */

static bool same_op(const bs_dump_coll *a, const bs_dump_coll *b) {
  return a->p2p == b->p2p && a->seq == b->seq && (a->p2p || a->cseq == b->cseq);
}

/* The end marker of a coalesced run ("coalesced", without tensors). */
static bool marker(const bs_dump_coll *c) {
  return !c->in_tensors && !c->out_tensors && strstr(c->op, "coalesced");
}

/* The parts' sizes, dtypes and ops joined, the end marker left out. */
static void join(bs_strpool *pool, const bs_dump_coll *p, size_t n,
                 bs_dump_coll *c, bool *oom) {
  bs_buf in = {0}, out = {0}, idt = {0}, odt = {0}, op = {0};
  const char *first = NULL;
  bool alike = true;
  for (size_t k = 0; k < n; k++) {
    if (marker(&p[k]))
      continue;
    bs_buf_printf(&in, "%s%.*s", in.len ? ", " : "[", (int)strlen(p[k].in) - 2,
                  p[k].in + 1);
    bs_buf_printf(&out, "%s%.*s", out.len ? ", " : "[",
                  (int)strlen(p[k].out) - 2, p[k].out + 1);
    bs_buf_printf(&idt, "%s%s", idt.len && p[k].in_dt[0] ? ", " : "",
                  p[k].in_dt);
    bs_buf_printf(&odt, "%s%s", odt.len && p[k].out_dt[0] ? ", " : "",
                  p[k].out_dt);
    alike = alike && (!first || first == p[k].op);
    first = first ? first : p[k].op;
    c->in_numel += p[k].in_numel;
    c->out_numel += p[k].out_numel;
    c->in_tensors += p[k].in_tensors;
    c->out_tensors += p[k].out_tensors;
  }
  bs_buf_printf(&in, "%s]", in.len ? "" : "[");
  bs_buf_printf(&out, "%s]", out.len ? "" : "[");
  bs_buf_printf(&op, "%s", alike && first ? first : p[n - 1].op);
  c->in = keep(pool, &in, oom);
  c->out = keep(pool, &out, oom);
  c->in_dt = keep(pool, &idt, oom);
  c->out_dt = keep(pool, &odt, oom);
  c->op = keep(pool, &op, oom);
  bs_buf_free(&in);
  bs_buf_free(&out);
  bs_buf_free(&idt);
  bs_buf_free(&odt);
  bs_buf_free(&op);
}

/* A p2p batch's kind and peer: its parts', where they all agree (else
 * the first part's kind, and no one peer). */
static void batch_kind(const bs_dump_coll *p, size_t n, bs_dump_coll *c) {
  const bs_dump_coll *first = NULL;
  c->peer = -1;
  for (size_t k = 0; k < n; k++) {
    if (marker(&p[k]))
      continue;
    if (!first) {
      first = &p[k];
      c->kind = first->kind;
      c->peer = first->peer;
    } else if (p[k].peer != first->peer || p[k].kind != first->kind) {
      c->peer = -1;
    }
  }
}

/* Entries p[0..n) of one seq as one op: the last entry (the one the work
 * is recorded against) says its state and times. */
static void fold(bs_strpool *pool, const bs_dump_coll *p, size_t n,
                 bs_dump_coll *c, bool *oom) {
  *c = p[n - 1];
  c->in_numel = c->out_numel = 0;
  c->in_tensors = c->out_tensors = 0;
  join(pool, p, n, c, oom);
  c->nparts = (int)n;
  c->parts = p;
  c->coalesced = true;
  c->frame = p[0].frame;
  c->label = p[0].label;
  c->rid = p[0].rid;
  if (c->p2p)
    batch_kind(p, n, c);
}

size_t bs_dumps_entry_fold(bs_strpool *pool, const bs_dump_coll *raw, size_t n,
                           bs_dump_coll *out, bool *oom) {
  size_t m = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && same_op(&raw[i], &raw[j]))
      j++;
    if (j - i == 1)
      out[m++] = raw[i];
    else
      fold(pool, raw + i, j - i, &out[m++], oom);
    i = j;
  }
  return m;
}
