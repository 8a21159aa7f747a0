/* Ending a command early: SIGINT, SIGTERM or SIGHUP to backstop end every
 * process it started, and the command then reports what it has (the runs
 * cut short as interrupted) and exits 128 + the signal (docs/cli.md). The
 * handler only records the signal and wakes the runner through a pipe
 * (bs_stop_fd), which polls it with the children's pipes; runs started
 * after it are not started. A forked child forgets all of it
 * (bs_stop_child) and dies with its parent (PR_SET_PDEATHSIG), so not even
 * a SIGKILL of backstop leaves its runs behind. */
#ifndef BS_STOP_H
#define BS_STOP_H

#include <sys/types.h>

#include "bs_err.h"

/* Installs the handlers (once; later calls do nothing). BS_ERR_INTERNAL
 * when the pipe cannot be made. */
bs_status bs_stop_catch(void);
/* The signal that asked the command to stop; 0: none (or not caught). */
int bs_stop_signal(void);
/* The read end the runner polls (readable once a signal came); -1 when
 * nothing is caught. */
int bs_stop_fd(void);
/* "interrupted by SIGINT" for the signal that came. */
const char *bs_stop_name(void);
/* In a child just forked from the process whose pid is parent: the
 * handlers back to default, the pipe closed, and a death signal armed for
 * when that parent dies (already dead: the child exits at once). */
void bs_stop_child(pid_t parent);

#endif
