#include "comm/front/bs_abort.h"

#include "bs_file.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PREFIX "abort."

uint64_t bs_abort_real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bs_status bs_abort_publish(const char *dir, const bs_abort_note *n) {
  char path[4096], text[512];
  snprintf(path, sizeof path, "%s/" PREFIX "%d", dir, n->first);
  int len = snprintf(text, sizeof text, "%d %llu %d %d %d %llu %u\n%s\n",
                     (int)n->st, (unsigned long long)n->real_ns, n->first,
                     n->size, n->follows ? 1 : 0, (unsigned long long)n->done,
                     (unsigned)n->torn, n->cause);
  return bs_file_publish(path, text, (size_t)len);
}

static bool read_note(const char *path, bs_abort_note *n) {
  FILE *f = fopen(path, "r");
  int st = 0, follows = 0;
  unsigned long long real = 0, done = 0;
  unsigned torn = 0;
  bool ok = f &&
            fscanf(f, "%d %llu %d %d %d %llu %u\n", &st, &real, &n->first,
                   &n->size, &follows, &done, &torn) == 7 &&
            st > BS_OK && st < BS_STATUS_COUNT &&
            fgets(n->cause, sizeof n->cause, f);
  if (f)
    fclose(f);
  if (!ok)
    return false;
  n->cause[strcspn(n->cause, "\n")] = '\0';
  n->st = (bs_status)st;
  n->real_ns = real;
  n->follows = follows != 0;
  n->done = done;
  n->torn = torn;
  return true;
}

/* Calls fn on every note of dir whose file name matches its first rank. */
static void each_note(const char *dir,
                      bool (*fn)(const bs_abort_note *n, void *arg),
                      void *arg) {
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char *end, path[4096];
    bs_abort_note n;
    if (strncmp(e->d_name, PREFIX, strlen(PREFIX)) != 0)
      continue;
    long first = strtol(e->d_name + strlen(PREFIX), &end, 10);
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (*end || !read_note(path, &n) || n.first != first)
      continue;
    if (!fn(&n, arg))
      break;
  }
  if (d)
    closedir(d);
}

typedef struct find_ctx {
  int own_first;
  bool found;
  bs_abort_note lowest;
} find_ctx;

static bool keep_lowest(const bs_abort_note *n, void *arg) {
  find_ctx *f = arg;
  if (n->follows || n->first == f->own_first ||
      (f->found && n->first >= f->lowest.first))
    return true;
  f->lowest = *n;
  f->found = true;
  return true;
}

bool bs_abort_find(const char *dir, int own_first, bs_abort_note *out) {
  find_ctx f = {.own_first = own_first};
  each_note(dir, keep_lowest, &f);
  if (f.found)
    *out = f.lowest;
  return f.found;
}

typedef struct collect_ctx {
  bs_abort_note *out;
  size_t n, max;
} collect_ctx;

static bool append(const bs_abort_note *n, void *arg) {
  collect_ctx *c = arg;
  if (c->n < c->max)
    c->out[c->n++] = *n;
  return c->n < c->max;
}

size_t bs_abort_collect(const char *dir, bs_abort_note *out, size_t max) {
  collect_ctx c = {.out = out, .max = max};
  each_note(dir, append, &c);
  return c.n;
}

static int severity(bs_status st) {
  switch (st) {
  case BS_ERR_RANK_DEAD:
    return 4;
  case BS_ERR_DESYNC:
    return 3;
  case BS_ERR_TIMEOUT:
    return 2;
  case BS_ERR_ABORTED:
    return 0;
  default:
    return 1;
  }
}

const bs_abort_note *bs_abort_best(const bs_abort_note *notes, size_t n) {
  const bs_abort_note *best = NULL;
  for (size_t i = 0; i < n; i++) {
    const bs_abort_note *c = &notes[i];
    if (c->follows)
      continue;
    if (!best || severity(c->st) > severity(best->st) ||
        (severity(c->st) == severity(best->st) && c->first < best->first))
      best = c;
  }
  return best;
}
