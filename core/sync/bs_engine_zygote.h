/* Engine processes forked, not executed: a process that starts many (a
 * worker of the runner, bs_engine_keep.h) executes the binary once more as
 * its zygote (exe [argv_prefix...] engine --zygote --fd 3: one thread, no
 * state of a run) and asks it for each engine, which it forks; the engine
 * then runs bs_engine_main as an executed one would, on its sockets as fds
 * 3.. and nothing else. An execution costs about 1 ms (the loader and its
 * CPU probes, which trap to the hypervisor on a VM); a fork of the small
 * zygote, a tenth of that.
 *
 * The engine is this process's child, as one spawned is: the zygote forks
 * twice, and the middle process exits at once, so that the engine is
 * handed to this process, which asked to be the reaper of its orphaned
 * descendants (PR_SET_CHILD_SUBREAPER). Its end, its exit status and a
 * SIGKILL to it are the trainer's to see and send, as before. */
#ifndef BS_ENGINE_ZYGOTE_H
#define BS_ENGINE_ZYGOTE_H

#include <stdbool.h>
#include <sys/types.h>

/* on: this process forks its engines from a zygote from now on (not a
 * child of it: a fork of it spawns them); off: it spawns them, its zygote
 * ended. */
void bs_engine_zygote_enable(bool on);

/* The engine process of ranks rank..rank+k-1 whose sockets are fds[0..k),
 * forked from this process's zygote (started by the first call) for
 * exe [prefix...]: *pid, a child of this process. false where no zygote
 * serves (not enabled here, another exe or prefix than its own, or it is
 * gone): the caller spawns the engine itself. */
bool bs_engine_zygote_spawn(const char *exe, char *const *prefix,
                            const int *fds, int k, int rank, pid_t *pid);

/* The zygote's body on its socket fd: forks an engine that runs
 * body(argc, argv) (argv: engine --fd 3 --rank R [--count K]) for each
 * request, until the socket closes (0). */
int bs_engine_zygote_serve(int fd, int (*body)(int argc, char **argv));

#endif
