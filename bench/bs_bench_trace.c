/* The trace rules (bs_bench_trace.h). */
#include "bs_bench_trace.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_json.h"

typedef struct trace_slice {
  int64_t t0, t1; /* tenths of a microsecond */
  int64_t pid, tid;
} trace_slice;

static int trace_by_start(const void *a, const void *b) {
  const trace_slice *x = a, *y = b;
  if (x->pid != y->pid)
    return x->pid < y->pid ? -1 : 1;
  if (x->tid != y->tid)
    return x->tid < y->tid ? -1 : 1;
  if (x->t0 != y->t0)
    return x->t0 < y->t0 ? -1 : 1;
  return (x->t1 < y->t1) - (x->t1 > y->t1); /* the longer first */
}

static bool trace_whole_tenths(double v) {
  return v >= 0 && fabs(v * 10 - (double)llround(v * 10)) < 1e-3;
}

/* The X slices; false at the first that breaks a rule of its own. */
static bool trace_slices_of(const bs_json *ev, trace_slice *s, size_t *n,
                            char *why, size_t wn) {
  *n = 0;
  for (size_t i = 0; i < ev->n; i++) {
    const bs_json *e = &ev->items[i];
    if (strcmp(bs_json_get_str(e, "ph", ""), "X") != 0)
      continue;
    double ts = bs_json_get_num(e, "ts", -1),
           dur = bs_json_get_num(e, "dur", -1);
    if (!trace_whole_tenths(ts) || !trace_whole_tenths(dur)) {
      snprintf(why, wn, "event %zu: ts %g, dur %g: not whole tenths of a us", i,
               ts, dur);
      return false;
    }
    s[*n] = (trace_slice){.t0 = llround(ts * 10),
                          .t1 = llround(ts * 10) + llround(dur * 10),
                          .pid = bs_json_get_int(e, "pid", -1),
                          .tid = bs_json_get_int(e, "tid", -1)};
    (*n)++;
  }
  return true;
}

/* No trace_slice ends past the one it starts in, on its track. */
static bool trace_nested(trace_slice *s, size_t n, char *why, size_t wn) {
  trace_slice *stack[64];
  int depth = 0;
  qsort(s, n, sizeof *s, trace_by_start);
  for (size_t i = 0; i < n; i++) {
    while (depth && (stack[depth - 1]->pid != s[i].pid ||
                     stack[depth - 1]->tid != s[i].tid ||
                     stack[depth - 1]->t1 <= s[i].t0))
      depth--;
    if (depth && s[i].t1 > stack[depth - 1]->t1) {
      snprintf(why, wn, "pid %lld tid %lld: [%lld, %lld] crosses [%lld, %lld]",
               (long long)s[i].pid, (long long)s[i].tid, (long long)s[i].t0,
               (long long)s[i].t1, (long long)stack[depth - 1]->t0,
               (long long)stack[depth - 1]->t1);
      return false;
    }
    if (depth < 64)
      stack[depth++] = &s[i];
  }
  return true;
}

bool bs_bench_trace_ok(const char *text, char *why, size_t n) {
  bs_json root = {0};
  trace_slice *s = NULL;
  size_t ns = 0;
  bool ok = bs_json_parse(text, strlen(text), &root) == BS_OK;
  const bs_json *ev = ok ? bs_json_get(&root, "traceEvents") : NULL;
  if (!ok)
    snprintf(why, n, "not JSON: %s", bs_err()->message);
  else if (!ev || ev->type != BS_JARR)
    snprintf(why, n, "no traceEvents array");
  ok = ok && ev && ev->type == BS_JARR && (s = malloc((ev->n + 1) * sizeof *s));
  ok = ok && trace_slices_of(ev, s, &ns, why, n) && trace_nested(s, ns, why, n);
  bs_err_clear();
  free(s);
  bs_json_free(&root);
  return ok;
}
