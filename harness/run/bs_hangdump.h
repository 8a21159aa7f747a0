/* What a forked run does when its parent, at the deadline, asks it to dump
 * (BS_DUMP_SIGNAL, bs_parent.h): a thread of its own waits for the signal
 * (blocked in every other thread, so no handler runs amid a rank's work),
 * writes each running rank's flight recorder and the report of where every
 * rank is as the run's artifacts, and sends the run's result (a hang, with
 * them) before the parent kills the process. The run's own result, when it
 * is ready first, wins: whichever claims the pipe writes it. In a
 * process-per-rank run each process dumps its own ranks and process 0
 * gathers them (bs_child_part.c). */
#ifndef BS_HANGDUMP_H
#define BS_HANGDUMP_H

#include "catalog/bs_run.h"
#include "record/bs_record.h"
#include "result/bs_result.h"

/* What a process-per-rank run's share in a dump asks for besides sending
 * the result (which every process does). */
enum {
  BS_HANGDUMP_WRITE = 1, /* this process writes the run's artifacts */
  BS_HANGDUMP_STAY = 2,  /* it then waits for its kill instead of exiting:
                            its ranks, stuck but alive, leave the others'
                            where they were until they dump too */
};
/* That share: called with this process's running ranks taken into dump
 * (their flight recorders, and where they are as dump->world_report, NULL
 * when no world was running); gathers the other processes' or hands this
 * one's over. Returns BS_HANGDUMP_* flags. */
typedef int (*bs_hangdump_fn)(bs_record *dump, bs_result *res, void *arg);
/* Whether a dump is asked of this process otherwise than by the signal (a
 * launcher's process 0 asks its peers through the run's folder); polled
 * every 10 ms while the run goes on. */
typedef bool (*bs_hangdump_asked_fn)(void *arg);

/* Holds the dump signal in the calling thread (and in what it forks or
 * creates afterwards) until a dump thread takes it. */
void bs_hangdump_block(void);

/* Before any other thread starts: blocks the signal and starts the thread.
 * rec: the run's record, for its start times (its phases are the ranks'
 * and are not read). part: NULL for a run whose ranks are all here;
 * asked: NULL for the signal alone; arg: theirs. */
bs_status bs_hangdump_start(const bs_run *cfg, const bs_record *rec, int fd,
                            bs_hangdump_fn part, bs_hangdump_asked_fn asked,
                            void *arg);
/* A bs_world_opts.past hook: a scheduled world's virtual clock passed the
 * run's deadline, every rank parked. Dumps as the signal would, from this
 * thread, judges it (a deadline shorter than the waits the watchdog bounds
 * is a fail that says so), sends the result and ends the process. */
void bs_hangdump_past(void *ctx);

/* The run's own result is ready: when a dump has begun, waits for it to
 * end the process; else ends the thread, and the run writes its result. */
void bs_hangdump_end(void);

#endif
