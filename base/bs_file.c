#include "bs_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bs_vec.h"

/* Between looks for a file another process has still to publish: from
 * the first, doubling up to the last, so a wait is late by at most what it
 * has waited (and the last): hundreds of processes waiting for one
 * verdict, each looking every millisecond, slowed the one that makes it. */
#define WAIT_POLL_FIRST_NS 1000000L
#define WAIT_POLL_LAST_NS 16000000L

/* The folders of path that mkdir made, deepest last: their lengths. */
typedef struct made_dirs {
  size_t len[64];
  size_t n;
} made_dirs;

/* mkdir -p path, noting what it made. */
static bs_status make_dirs(const char *path, made_dirs *m) {
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1;; p++) {
    char c = *p;
    if (c != '/' && c != '\0')
      continue;
    *p = '\0';
    bool made = mkdir(tmp, 0755) == 0;
    if (made && m->n < sizeof m->len / sizeof m->len[0])
      m->len[m->n++] = strlen(tmp);
    if (!made && errno != EEXIST)
      return bs_err_fail(BS_ERR_INVALID, NULL, "cannot create %s: %s", tmp,
                         strerror(errno));
    *p = c;
    if (c == '\0')
      return BS_OK;
  }
}

static void unmake_dirs(const char *path, const made_dirs *m) {
  char tmp[1024];
  for (size_t i = m->n; i-- > 0;) {
    snprintf(tmp, sizeof tmp, "%.*s", (int)m->len[i], path);
    rmdir(tmp);
  }
}

bs_status bs_file_mkdir_p(const char *path) {
  made_dirs made = {0};
  return make_dirs(path, &made);
}

/* The temporary a file is written to before it is renamed to path. */
static void temp_of(const char *path, char *out, size_t n) {
  snprintf(out, n, "%s.tmp.%ld", path, (long)getpid());
}

bs_status bs_file_publish(const char *path, const void *data, size_t n) {
  bs_status st = BS_OK;
  char tmp[1100];
  temp_of(path, tmp, sizeof tmp);
  FILE *f = fopen(tmp, "wb");
  bool ok = f && (n == 0 || fwrite(data, n, 1, f) == 1);
  if (f && fclose(f) != 0)
    ok = false;
  if (!ok || rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    BS_FAIL(BS_ERR_INVALID, NULL, "cannot write %s: %s", path, strerror(e));
  }
out:
  return st;
}

bs_status bs_file_probe(const char *path) {
  struct stat sb;
  char tmp[1100];
  if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
    return bs_err_fail(BS_ERR_INVALID, NULL, "cannot write %s: %s", path,
                       S_ISDIR(sb.st_mode) ? "a folder" : "not a regular file");
  temp_of(path, tmp, sizeof tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return bs_err_fail(BS_ERR_INVALID, NULL, "cannot write %s: %s", path,
                       strerror(errno));
  close(fd);
  unlink(tmp);
  return BS_OK;
}

bs_status bs_file_probe_dir(const char *path) {
  struct stat sb;
  char probe[1100];
  made_dirs made = {0};
  if (stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode))
    return bs_err_fail(BS_ERR_INVALID, NULL, "%s is a file, not a folder",
                       path);
  bs_status st = make_dirs(path, &made);
  /* A name of its own (mkdtemp): a process killed between the two calls
   * leaves its probe, which a later one with its pid collided with. */
  snprintf(probe, sizeof probe, "%s/.backstop-probe.XXXXXX", path);
  if (st == BS_OK && !mkdtemp(probe))
    st = bs_err_fail(BS_ERR_INVALID, NULL, "cannot write in %s: %s", path,
                     strerror(errno));
  else if (st == BS_OK)
    rmdir(probe);
  unmake_dirs(path, &made);
  return st;
}

/* The whole of a file another process published (so it does not grow). */
bs_status bs_file_read(const char *path, char **data, size_t *n) {
  bs_status st = BS_OK;
  struct stat sb;
  char *buf = NULL;
  FILE *f = fopen(path, "rb");
  if (!f || fstat(fileno(f), &sb) != 0)
    BS_FAIL(BS_ERR_INVALID, NULL, "cannot read %s: %s", path, strerror(errno));
  size_t len = (size_t)sb.st_size;
  buf = malloc(len + 1);
  if (!buf)
    BS_FAIL(BS_ERR_NOMEM, NULL, "%s: %zu bytes", path, len);
  if (fread(buf, 1, len, f) != len)
    BS_FAIL(BS_ERR_INVALID, NULL, "cannot read %s: short read", path);
  buf[len] = '\0';
  *n = len;
  *data = buf;
  buf = NULL;
out:
  free(buf);
  if (f)
    fclose(f);
  return st;
}

static double mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

bs_status bs_file_wait(const char *path, int wait_ms, char **data, size_t *n) {
  return bs_file_wait_or(path, wait_ms, NULL, NULL, data, n);
}

/* Until path exists, stop(arg) is true or until (mono_ms) has passed. */
static bs_status exists_by(const char *path, double until, int wait_ms,
                           bool (*stop)(const void *), const void *arg) {
  struct timespec nap = {0, WAIT_POLL_FIRST_NS};
  while (access(path, F_OK) != 0) {
    if (stop && stop(arg))
      return bs_err_fail(BS_ERR_ABORTED, NULL, "stopped waiting for %s", path);
    double left = until - mono_ms();
    if (left <= 0)
      return bs_err_fail(BS_ERR_TIMEOUT, NULL, "no %s after %d ms", path,
                         wait_ms);
    if (nap.tv_nsec > left * 1e6)
      nap.tv_nsec = (long)(left * 1e6) + 1;
    nanosleep(&nap, NULL);
    nap.tv_nsec = nap.tv_nsec * 2 < WAIT_POLL_LAST_NS ? nap.tv_nsec * 2
                                                      : WAIT_POLL_LAST_NS;
  }
  return BS_OK;
}

bs_status bs_file_wait_or(const char *path, int wait_ms,
                          bool (*stop)(const void *), const void *arg,
                          char **data, size_t *n) {
  bs_status st = exists_by(path, mono_ms() + wait_ms, wait_ms, stop, arg);
  return st == BS_OK ? bs_file_read(path, data, n) : st;
}

bs_status bs_file_wait_all(const char *const *paths, size_t n, int wait_ms) {
  double until = mono_ms() + wait_ms;
  bs_status st = BS_OK;
  for (size_t i = 0; i < n && st == BS_OK; i++)
    st = exists_by(paths[i], until, wait_ms, NULL, NULL);
  return st;
}

/* ---- scratch folders that outlive no one (bs_file.h) ----
 *
 * Each is locked by the process that made it, and a folder whose lock is
 * free and which has not changed for an hour belongs to a process that
 * was killed outright; the next one made with its prefix removes it. A
 * lock rather than a pid: a pid comes round again, and /dev/shm may be shared
 * by processes of other pid namespaces, where a pid names someone else; a lock
 * is the kernel's and goes with the last process holding it. */

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

/* The lock of a folder bs_file_scratch made let go (any other path:
 * nothing). */
static void release(const char *path) {
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

static int remove_entry(const char *path, const struct stat *sb, int flag,
                        struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path) != 0 && errno != ENOENT;
}

bs_status bs_file_remove_tree(const char *path) {
  release(path);
  if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 &&
      errno != ENOENT)
    return bs_err_fail(BS_ERR_INVALID, NULL, "cannot remove %s: %s", path,
                       strerror(errno));
  return BS_OK;
}
