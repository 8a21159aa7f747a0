/* One Flight Recorder entry as the model's op, and a rank's entries folded
 * into coalesced ops. Where versions and backends write a field
 * differently (a seq as collective_seq_id or seq_id, a time as null or 0,
 * pg_status as numbers or strings, no is_p2p before 2.3) every form is
 * read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumps/bs_dumps_int.h"
#include "dumps/bs_strpool.h"
#include "util/bs_buf.h"

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
static void sizes_long(const bs_json *v, bs_buf *b) {
  bs_buf_printf(b, "[");
  for (size_t i = 0; v && v->type == BS_JARR && i < v->n; i++) {
    const bs_json *t = &v->items[i];
    bs_buf_printf(b, "%s[", i ? ", " : "");
    for (size_t j = 0; t->type == BS_JARR && j < t->n; j++)
      bs_buf_printf(b, "%s%lld", j ? ", " : "",
                    (long long)(t->items[j].integral ? t->items[j].i : 0));
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
static const char *sizes(bs_strpool *pool, const bs_json *v, bs_buf *b,
                         uint64_t *numel, int *ntens, bool *oom) {
  char buf[512];
  size_t len = 0;
  *numel = 0;
  *ntens = 0;
  put(buf, sizeof buf, &len, "[");
  for (size_t i = 0; v && v->type == BS_JARR && i < v->n; i++) {
    const bs_json *t = &v->items[i];
    uint64_t p = 1;
    put(buf, sizeof buf, &len, i ? ", [" : "[");
    for (size_t j = 0; t->type == BS_JARR && j < t->n; j++) {
      int64_t x = t->items[j].integral ? t->items[j].i : 0;
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

static const char *dtypes(bs_strpool *pool, const bs_json *v, bs_buf *b,
                          bool *oom) {
  char buf[512];
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; v && v->type == BS_JARR && i < v->n; i++)
    if (v->items[i].type == BS_JSTR) {
      put(buf, sizeof buf, &len, len ? ", " : "");
      put(buf, sizeof buf, &len, v->items[i].str);
    }
  if (len < sizeof buf)
    return keep_str(pool, buf, oom);
  for (size_t i = 0; v && v->type == BS_JARR && i < v->n; i++)
    if (v->items[i].type == BS_JSTR)
      bs_buf_printf(b, "%s%s", b->len ? ", " : "", v->items[i].str);
  return keep(pool, b, oom);
}

static void frame(const bs_json *e, bs_buf *b) {
  const bs_json *f = bs_json_get(e, "frames");
  if (!f || f->type != BS_JARR || f->n == 0)
    return;
  const bs_json *top = &f->items[0];
  bs_buf_printf(b, "%s at %s:%lld", bs_json_get_str(top, "name", "?"),
                bs_json_get_str(top, "filename", "?"),
                (long long)bs_json_get_int(top, "line", 0));
}

/* A time in ns: null, 0 and anything not a positive integer are none. */
static uint64_t ns_of(const bs_json *e, const char *key) {
  int64_t v = bs_json_get_int(e, key, 0);
  return v > 0 ? (uint64_t)v : 0;
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
    const char *arrow = strstr(meta, "->");
    c->kind = BS_DUMP_SEND;
    c->peer = arrow ? atoi(arrow + 2) : -1;
  } else if (len == 4 && !strncmp(op, "recv", 4)) {
    const char *arrow = strstr(meta, "<-");
    c->kind = BS_DUMP_RECV;
    c->peer = arrow && arrow[2] != '?' ? atoi(arrow + 2) : -1;
  }
  return keep_str(pool, buf, oom);
}

/* Done, running or waiting, from every field that says so: gloo (torch
 * 2.15) writes every entry `scheduled` and no times, its done ones
 * `retired`; pg_status counts collectives (not p2p ops). */
static bs_dump_state state_of(const bs_json *e, const bs_dump_coll *c,
                              const bs_dumps_status *st) {
  const char *s = bs_json_get_str(e, "state", "scheduled");
  bool coll = c->kind == BS_DUMP_COLL;
  int64_t seq = (int64_t)c->cseq;
  if (!strcmp(s, "completed") || bs_json_get_bool(e, "retired", false) ||
      c->completed_ns || c->duration_ms >= 0 ||
      (coll && st && st->completed >= seq))
    return BS_DUMP_COMPLETED;
  if (!strcmp(s, "started") || c->started_ns ||
      (coll && st && st->started >= seq))
    return BS_DUMP_STARTED;
  return BS_DUMP_SCHEDULED;
}

static int64_t seq_of(const bs_json *e, const char *key) {
  int64_t v = bs_json_get_int(e, key, -1);
  return v >= 0 ? v : bs_json_get_int(e, "seq_id", 0);
}

void bs_dumps_entry_read(bs_strpool *pool, const bs_json *e,
                         const bs_dumps_status *st, bs_dump_coll *c,
                         bool *oom) {
  bs_buf b = {0};
  const bs_json *dur = bs_json_get(e, "duration_ms");
  memset(c, 0, sizeof *c);
  c->op = op_of(pool, bs_json_get_str(e, "profiling_name", "?"), c, oom);
  /* is_p2p, where written, says it (a batch's end marker is p2p too);
   * before 2.3 the name does. */
  const bs_json *is_p2p = bs_json_get(e, "is_p2p");
  c->p2p =
      is_p2p && is_p2p->type == BS_JBOOL ? is_p2p->b : c->kind != BS_DUMP_COLL;
  if (!c->p2p)
    c->kind = BS_DUMP_COLL;
  c->cseq = (uint64_t)seq_of(e, "collective_seq_id");
  c->seq = c->p2p ? (uint64_t)bs_json_get_int(e, "p2p_seq_id", 0) : c->cseq;
  c->in = sizes(pool, bs_json_get(e, "input_sizes"), &b, &c->in_numel,
                &c->in_tensors, oom);
  c->out = sizes(pool, bs_json_get(e, "output_sizes"), &b, &c->out_numel,
                 &c->out_tensors, oom);
  c->in_dt = dtypes(pool, bs_json_get(e, "input_dtypes"), &b, oom);
  c->out_dt = dtypes(pool, bs_json_get(e, "output_dtypes"), &b, oom);
  c->label = keep_str(pool, bs_json_get_str(e, "label", ""), oom);
  frame(e, &b);
  c->frame = keep(pool, &b, oom);
  c->duration_ms = dur && dur->type == BS_JNUM ? dur->num : -1;
  c->created_ns = ns_of(e, "time_created_ns");
  c->started_ns = ns_of(e, "time_discovered_started_ns");
  c->completed_ns = ns_of(e, "time_discovered_completed_ns");
  c->state = state_of(e, c, st);
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
