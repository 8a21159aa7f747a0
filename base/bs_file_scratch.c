/* Scratch folders that outlive no one (bs_file.h): each is locked by the
 * process that made it, and a folder whose lock is free and which has not
 * changed for an hour belongs to a process that was killed outright; the
 * next one made with its prefix removes it. A lock rather than a pid: a
 * pid comes round again, and /dev/shm may be shared by processes of other
 * pid namespaces, where a pid names someone else; a lock is the kernel's
 * and goes with the last process holding it. */
#include "bs_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bs_vec.h"

/* Untouched this long and unlocked: left by a killed process. */
enum { STALE_S = 3600 };

/* The folders this process made and holds: the path and its locked
 * descriptor (close-on-exec: an engine executed in a run does not hold
 * it; a fork does, and lives no longer than the run). */
typedef struct held {
  char path[64];
  int fd;
} held;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static held *holds;
static size_t nholds, capholds;

/* The folder locked and noted; false (errno) when it cannot be. */
static bool hold(const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0)
    goto fail;
  pthread_mutex_lock(&mu);
  bool ok = strlen(path) < sizeof holds->path &&
            bs_vec_reserve(&holds, &capholds, nholds + 1, sizeof *holds,
                           "scratch folders") == BS_OK;
  if (ok) {
    snprintf(holds[nholds].path, sizeof holds->path, "%s", path);
    holds[nholds++].fd = fd;
  }
  pthread_mutex_unlock(&mu);
  if (ok)
    return true;
  bs_err_clear();
  errno = ENOMEM;
fail:
  if (fd >= 0)
    close(fd);
  return false;
}

void bs_file_scratch_release(const char *path) {
  pthread_mutex_lock(&mu);
  for (size_t i = 0; i < nholds; i++)
    if (strcmp(holds[i].path, path) == 0) {
      close(holds[i].fd);
      holds[i] = holds[--nholds];
      break;
    }
  pthread_mutex_unlock(&mu);
}

/* base/name, a folder of prefix's unlocked and untouched for STALE_S:
 * removed. */
static void reap_one(const char *base, const char *name) {
  char path[512];
  struct stat sb;
  snprintf(path, sizeof path, "%s/%s", base, name);
  if (lstat(path, &sb) != 0 || !S_ISDIR(sb.st_mode) ||
      time(NULL) - sb.st_mtime < STALE_S)
    return;
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return;
  if (flock(fd, LOCK_EX | LOCK_NB) == 0 && bs_file_remove_tree(path) != BS_OK)
    bs_err_clear(); /* another's folder we may not remove: left as it is */
  close(fd);
}

/* The folders of prefix in base left by killed processes: removed. */
static void reap(const char *base, const char *prefix) {
  DIR *d = opendir(base);
  size_t len = strlen(prefix);
  if (!d)
    return;
  for (struct dirent *e; (e = readdir(d));)
    if (strncmp(e->d_name, prefix, len) == 0 && e->d_name[len] == '.' &&
        strlen(e->d_name + len + 1) == 6)
      reap_one(base, e->d_name);
  closedir(d);
}

bs_status bs_file_scratch(const char *prefix, char *out, size_t n) {
  static const char *const bases[] = {"/dev/shm", "/tmp"};
  int e = 0;
  for (size_t i = 0; i < sizeof bases / sizeof *bases; i++) {
    if ((size_t)snprintf(out, n, "%s/%s.XXXXXX", bases[i], prefix) >= n)
      break;
    if (access(bases[i], W_OK | X_OK) != 0 || !mkdtemp(out)) {
      e = errno;
      continue;
    }
    if (hold(out)) {
      reap(bases[i], prefix);
      return BS_OK;
    }
    e = errno;
    rmdir(out);
  }
  return bs_err_fail(BS_ERR_INTERNAL, NULL,
                     "a folder for %s in /dev/shm or /tmp: %s", prefix,
                     strerror(e ? e : ENAMETOOLONG));
}
