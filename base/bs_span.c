#include "bs_span.h"

#include "bs_clock.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static _Atomic uint64_t total[BS_SPAN_COUNT], count[BS_SPAN_COUNT];
static uint64_t forked_at; /* set in the parent before fork */
static _Atomic uint64_t lifecycle_end;

static const char *const names[] = {
#define BS_SPAN_NAME(id, name, what) name,
    BS_SPAN_KINDS(BS_SPAN_NAME)
#undef BS_SPAN_NAME
};

const char *bs_span_name(bs_span_kind k) {
  return k < BS_SPAN_COUNT ? names[k] : "?";
}

bs_span_kind bs_span_named(const char *name) {
  int k = 0;
  while (k < BS_SPAN_COUNT && strcmp(names[k], name) != 0)
    k++;
  return (bs_span_kind)k;
}

/* Real time even on a scheduled rank: spans say where a process's time
 * went. */
uint64_t bs_span_now(void) {
  return bs_clock_real_ns();
}

void bs_span_add(bs_span_kind k, uint64_t t0, uint64_t t1) {
  if (k >= BS_SPAN_COUNT || t1 < t0)
    return;
  atomic_fetch_add(&total[k], t1 - t0);
  atomic_fetch_add(&count[k], 1);
  if (k == BS_SPAN_LIFECYCLE)
    atomic_store(&lifecycle_end, t1);
}

void bs_span_since(bs_span_kind k, uint64_t since) {
  bs_span_add(k, since, bs_span_now());
}

void bs_span_mark_fork(void) {
  forked_at = bs_span_now();
}

void bs_span_forked(void) {
  if (forked_at)
    bs_span_since(BS_SPAN_PROC_START, forked_at);
  forked_at = 0;
}

void bs_span_save(void) {
  const char *dir = getenv("BS_SPANS");
  char path[4096], tmp[4200], line[2048];
  size_t n = 0;
  if (!dir || !*dir)
    return;
  for (int k = 0; k < BS_SPAN_COUNT; k++) {
    uint64_t c = atomic_load(&count[k]);
    if (c && n < sizeof line)
      n += (size_t)snprintf(line + n, sizeof line - n, "%s %llu %llu\n",
                            names[k], (unsigned long long)c,
                            (unsigned long long)atomic_load(&total[k]));
  }
  snprintf(path, sizeof path, "%s/spans.%d", dir, (int)getpid());
  /* Not spans.*: a process killed between the write and the rename
   * leaves it, and readers take every spans.* as a process's totals. */
  snprintf(tmp, sizeof tmp, "%s/.spans.%d.tmp", dir, (int)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  /* A measurement: a short write only loses it. */
  bool whole = write(fd, line, n < sizeof line ? n : sizeof line - 1) >= 0;
  close(fd);
  if (!whole || rename(tmp, path) != 0)
    unlink(tmp);
}

void bs_span_flush(void) {
  uint64_t end = atomic_load(&lifecycle_end);
  if (end && getenv("BS_SPANS"))
    bs_span_since(BS_SPAN_TEARDOWN, end);
  bs_span_save();
}
