/* Two verdicts compared (bs_dumps_match.h). */
#include "bs_dumps_match.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const bs_json *root_of(const bs_json *roots, int64_t rank) {
  for (size_t i = 0; roots && i < roots->n; i++)
    if (bs_json_get_int(&roots->items[i], "rank", -1) == rank)
      return &roots->items[i];
  return NULL;
}

static const char *kind(const bs_json *r, bool replayed) {
  const char *k = bs_json_get_str(r, "kind", "?");
  if (!strcmp(k, "unreadable"))
    k = "no_dump";
  return replayed && !strcmp(k, "no_dump") ? "stalled" : k;
}

/* {"group", "op", "p2p"} of a ref, as text: "8 #2" or "1 p2p #6". */
static void ref_text(const bs_json *x, char *buf, size_t n) {
  snprintf(buf, n, "%s %s#%lld", bs_json_get_str(x, "group", "?"),
           bs_json_get_bool(x, "p2p", false) ? "p2p " : "",
           (long long)bs_json_get_int(x, "op", -1));
}

static bool same_ref(const bs_json *a, const bs_json *b) {
  char x[96], y[96];
  ref_text(a, x, sizeof x);
  ref_text(b, y, sizeof y);
  return !strcmp(x, y);
}

/* got's op is want's, or one of those want holds it missing from where
 * the dumps cannot tell which comes first. */
static bool op_matches(const bs_json *want, const bs_json *got) {
  const bs_json *held = bs_json_get(want, "held");
  if (same_ref(want, got))
    return true;
  if (bs_json_get_bool(want, "order_known", true) || !held)
    return false;
  for (size_t i = 0; i < held->n; i++)
    if (same_ref(&held->items[i], got))
      return true;
  return false;
}

static bool root_matches(const bs_json *w, const bs_json *g, bool replayed,
                         char *why, size_t n) {
  char a[96], b[96];
  const char *mw = bs_json_get_str(w, "mismatch", ""),
             *mg = bs_json_get_str(g, "mismatch", "");
  ref_text(w, a, sizeof a);
  ref_text(g, b, sizeof b);
  /* A replay issues counts, not shapes: of as many elements, its ranks'
   * counts are told apart as other sizes. */
  if (replayed && !strcmp(mw, "shape") && !strcmp(mg, "size"))
    mg = mw;
  if (strcmp(kind(w, replayed), kind(g, replayed)) || !op_matches(w, g) ||
      strcmp(mw, mg)) {
    snprintf(why, n, "rank %lld: want %s at %s%s%s, got %s at %s%s%s",
             (long long)bs_json_get_int(w, "rank", -1), kind(w, replayed), a,
             mw[0] ? " " : "", mw, kind(g, replayed), b, mg[0] ? " " : "", mg);
    return false;
  }
  return true;
}

static void ranks_text(const bs_json *roots, char *buf, size_t n) {
  size_t k = 0;
  buf[0] = '\0';
  for (size_t i = 0; roots && i < roots->n && k < n; i++)
    k += (size_t)snprintf(
        buf + k, n - k, "%s%lld", i ? "," : "",
        (long long)bs_json_get_int(&roots->items[i], "rank", -1));
  if (!roots || !roots->n)
    snprintf(buf, n, "none");
}

static bool roots_match(const bs_json *want, const bs_json *got, bool replayed,
                        char *why, size_t n) {
  const bs_json *rw = bs_json_get(want, "roots"),
                *rg = bs_json_get(got, "roots");
  size_t nw = rw ? rw->n : 0, ng = rg ? rg->n : 0;
  bool same = nw == ng;
  for (size_t i = 0; same && i < nw; i++)
    same = root_of(rg, bs_json_get_int(&rw->items[i], "rank", -1)) != NULL;
  if (!same) {
    char a[256], b[256];
    ranks_text(rw, a, sizeof a);
    ranks_text(rg, b, sizeof b);
    snprintf(why, n, "roots: want ranks %s, got ranks %s", a, b);
    return false;
  }
  for (size_t i = 0; i < nw; i++) {
    const bs_json *w = &rw->items[i];
    if (!root_matches(w, root_of(rg, bs_json_get_int(w, "rank", -1)), replayed,
                      why, n))
      return false;
  }
  return true;
}

/* The groups the order deadlocks run through, sorted, comma-separated. */
static void deadlock_groups(const bs_json *v, char *buf, size_t n) {
  const bs_json *cs = bs_json_get(v, "cycles");
  const char *names[64];
  size_t k = 0;
  for (size_t c = 0; cs && c < cs->n; c++) {
    const bs_json *cy = &cs->items[c], *gs = bs_json_get(cy, "groups"),
                  *ops = bs_json_get(cy, "ops");
    if (!bs_json_get_bool(cy, "order_deadlock", false))
      continue;
    for (size_t i = 0; gs && i < gs->n && k < 64; i++)
      names[k++] = gs->items[i].str ? gs->items[i].str : "?";
    for (size_t i = 0; ops && i < ops->n && k < 64; i++)
      names[k++] =
          bs_json_get_str(bs_json_get(&ops->items[i], "at"), "group", "?");
  }
  for (size_t i = 0; i < k; i++) /* sorted, alike once */
    for (size_t j = i + 1; j < k; j++)
      if (strcmp(names[j], names[i]) < 0) {
        const char *t = names[i];
        names[i] = names[j];
        names[j] = t;
      }
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < k && len < n; i++)
    if (!i || strcmp(names[i], names[i - 1]))
      len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? "," : "",
                              names[i]);
}

bool bs_dumps_match(const bs_json *want, const bs_json *got, bool replayed,
                    char *why, size_t n) {
  const char *vw = bs_json_get_str(want, "verdict", "?"),
             *vg = bs_json_get_str(got, "verdict", "?");
  char a[256], b[256];
  if (strcmp(vw, vg)) {
    snprintf(why, n, "verdict: want %s, got %s", vw, vg);
    return false;
  }
  if (!roots_match(want, got, replayed, why, n))
    return false;
  deadlock_groups(want, a, sizeof a);
  deadlock_groups(got, b, sizeof b);
  if (!strcmp(vw, "hang") && strcmp(a, b)) {
    snprintf(why, n, "order deadlock: want groups [%s], got [%s]", a, b);
    return false;
  }
  return true;
}

bool bs_dumps_match_json(const char *want, const char *got, bool replayed,
                         char *why, size_t n) {
  bs_json w = {0}, g = {0};
  bool ok = bs_json_parse(want, strlen(want), &w) == BS_OK &&
            bs_json_parse(got, strlen(got), &g) == BS_OK;
  if (!ok) {
    snprintf(why, n, "a verdict does not parse: %s", bs_err()->message);
    bs_err_clear();
  }
  ok = ok && bs_dumps_match(&w, &g, replayed, why, n);
  bs_json_free(&w);
  bs_json_free(&g);
  return ok;
}
