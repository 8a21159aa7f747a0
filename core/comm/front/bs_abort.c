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
  int len =
      snprintf(text, sizeof text, "%d %llu %d %d\n%s\n", (int)n->st,
               (unsigned long long)n->real_ns, n->first, n->size, n->cause);
  return bs_file_publish(path, text, (size_t)len);
}

static bool read_note(const char *path, bs_abort_note *n) {
  FILE *f = fopen(path, "r");
  int st = 0;
  unsigned long long real = 0;
  bool ok =
      f && fscanf(f, "%d %llu %d %d\n", &st, &real, &n->first, &n->size) == 4 &&
      st > BS_OK && st < BS_STATUS_COUNT && fgets(n->cause, sizeof n->cause, f);
  if (f)
    fclose(f);
  if (!ok)
    return false;
  n->cause[strcspn(n->cause, "\n")] = '\0';
  n->st = (bs_status)st;
  n->real_ns = real;
  return true;
}

bool bs_abort_find(const char *dir, int own_first, bs_abort_note *out) {
  DIR *d = opendir(dir);
  bool found = false;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char *end;
    if (strncmp(e->d_name, PREFIX, strlen(PREFIX)) != 0)
      continue;
    long first = strtol(e->d_name + strlen(PREFIX), &end, 10);
    if (*end || first == own_first || (found && first >= out->first))
      continue;
    char path[4096];
    bs_abort_note n;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (read_note(path, &n) && n.first == first) {
      *out = n;
      found = true;
    }
  }
  if (d)
    closedir(d);
  return found;
}
