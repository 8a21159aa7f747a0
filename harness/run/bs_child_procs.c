#include "run/bs_child_procs.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "bs_file.h"

/* After process 0's verdict the others only read it and leave. */
enum { REAP_MS = 5000 };

static void reap(pid_t *pids, int n, bool kill_now) {
  struct timespec nap = {0, 1000000L};
  for (int i = 0; kill_now && i < n; i++)
    if (pids[i] > 0)
      kill(pids[i], SIGKILL);
  for (int waited = 0, left = n; left > 0;) {
    left = 0;
    for (int i = 0; i < n; i++) {
      /* ECHILD: not this process's child (a pool's worker, bs_pool.h),
       * whose parent reaps it */
      pid_t r = pids[i] > 0 ? waitpid(pids[i], NULL, WNOHANG) : 0;
      if (r == pids[i] || (r < 0 && errno == ECHILD))
        pids[i] = 0;
      left += pids[i] > 0;
    }
    if (left && ++waited > REAP_MS)
      for (int i = 0; i < n; i++)
        if (pids[i] > 0)
          kill(pids[i], SIGKILL);
    if (left)
      nanosleep(&nap, NULL);
  }
}

void bs_child_procs_end(pid_t *pids, int n, const char *dir, bool kill_now) {
  reap(pids, n, kill_now);
  if (bs_file_remove_tree(dir) != BS_OK)
    bs_err_clear(); /* a leftover in /tmp does not change the verdict */
}
