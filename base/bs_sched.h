/* A deterministic scheduler of tasks on virtual time, after FoundationDB's
 * simulator and TigerBeetle's VOPR: the tasks (a simulated world's ranks)
 * are real threads, or fibers on one thread (bs_sched_spawn), and one runs
 * at a time; the same seed makes the same decisions on either. Every
 * point where a task would block (a wait on a word, a sleep, a yield, its
 * end) hands the baton to the scheduler, which picks the next runnable
 * task from the run's seed:
 *
 *   random   a seeded random choice among the runnable tasks (by task
 *            number, so the choice depends on the set, never on the order
 *            tasks became runnable);
 *   pct:D    probabilistic concurrency testing (Burckhardt et al., ASPLOS
 *            2010): the runnable task of highest priority runs, priorities
 *            a seeded permutation, lowered at D-1 seeded change points
 *            among the first K decisions (pct:D:K; K 4096 by default).
 *
 * The clock only the scheduler advances: a task's waits and sleeps end at
 * virtual times, and when every task waits the clock jumps to the earliest
 * of them. Nothing a task does costs virtual time
 * unless it sleeps. A task's thread reads the virtual clock from
 * bs_clock_mono_ns (bs_clock_set_virtual), so a scheduled run's every
 * timestamp, timeout and duration is a function of its seed: the same on a
 * quiet machine, a loaded one, 1 core or 64.
 *
 * Each decision (the task chosen, at which virtual time) is folded into a
 * hash and counted, and the first ones kept: the evidence that one seed is
 * one schedule. A task may step outside (bs_sched_outside) around a wait
 * for the others that the scheduler cannot see (a condition variable of
 * the caller's): the others run meanwhile, the clock moves as if it were
 * not there, and when nothing else can happen the scheduler waits for
 * every task outside to come back. When it comes back while others run is
 * the one thing of a schedule the OS decides.
 *
 * The one real-time bound is a guard against a bug of the scheduler
 * itself: no decision for guard_ms aborts the process, saying so. */
#ifndef BS_SCHED_H
#define BS_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bs_err.h"
#include "bs_sched_spec.h"

typedef struct bs_sched bs_sched;

/* A scheduler of ntasks tasks (numbered 0..ntasks-1), its clock at
 * origin_ns; spec's policy must not be threads. */
bs_status bs_sched_create(int ntasks, const bs_sched_spec *spec,
                          uint64_t origin_ns, bs_sched **out);
void bs_sched_destroy(bs_sched *s);

/* stuck(ctx) runs, on whichever thread decides and with no lock of the
 * scheduler's held, when every task waits and none has a timer (a
 * deadlock): it should wake some (bs_sched_notify), else the process
 * aborts, saying so. */
void bs_sched_set_stuck(bs_sched *s, void (*stuck)(void *ctx), void *ctx);

/* quiet(ctx) runs as stuck does, before the clock moves or the scheduler
 * waits for the tasks outside, whenever no task can run and none sleeps:
 * every task inside waits on something only another task does (a
 * timer's bound aside), so none can move unless one outside comes back or
 * a bound passes. It may wake some (bs_sched_notify), or leave all be. */
void bs_sched_set_quiet(bs_sched *s, void (*quiet)(void *ctx), void *ctx);

/* The clock's last point: when it would move past until_ns (every task
 * waits and the earliest timer is later), past(ctx) runs as stuck does,
 * on the deciding thread with every task parked, instead: a run's
 * deadline on virtual time. It should end the process; if it returns,
 * the clock moves on as if there were no deadline. */
void bs_sched_set_deadline(bs_sched *s, uint64_t until_ns,
                           void (*past)(void *ctx), void *ctx);

/* Fibers instead of threads (bs_fiber.h): task runs fn(arg) on [stack,
 * stack + size) on the thread that calls bs_sched_run, which switches to a
 * task in place of waking its thread: a hand-over without the kernel. For
 * every task before bs_sched_run (fn: the same for all); fn calls
 * bs_sched_begin and bs_sched_end as a thread's would. A fiber cannot step
 * outside (bs_sched_outside): its thread runs the others. */
bs_status bs_sched_spawn(bs_sched *s, int task, void *(*fn)(void *), void *arg,
                         void *stack, size_t size);

/* On task's own thread, first: it joins (and its thread reads the virtual
 * clock from then on) and waits for its first turn. */
void bs_sched_begin(bs_sched *s, int task);
/* On the task's thread, last: it leaves and hands the baton on. */
void bs_sched_end(bs_sched *s);
/* A task whose thread never came (it could not start): ended. */
void bs_sched_absent(bs_sched *s, int task);
/* On the thread that started the tasks: waits until every task has begun
 * (or is absent), makes the first decision, and returns once every task
 * has ended. With fibers, that thread runs them meanwhile; a thread of
 * the scheduler's keeps the guard. */
void bs_sched_run(bs_sched *s);

/* The scheduler of the calling thread's task (NULL: not a task). */
bs_sched *bs_sched_self(void);
/* The virtual clock, in ns. */
uint64_t bs_sched_now(const bs_sched *s);

/* On a task's thread (the one running): it waits until bs_sched_notify(on)
 * or until the clock reaches until_ns (UINT64_MAX: no bound; on NULL: a
 * sleep). The caller looks at what it waits for before and after: nothing
 * else runs between its look and the wait, and a wake may be for another
 * reason than its own. */
void bs_sched_wait(bs_sched *s, const void *on, uint64_t until_ns);
/* Sleeps ns of virtual time: bs_sched_wait(s, NULL, now + ns). */
void bs_sched_sleep(bs_sched *s, uint64_t ns);
/* A scheduling point: another task may run first. */
void bs_sched_yield(bs_sched *s);
/* From any thread, any lock held: every task waiting on `on` may run. */
void bs_sched_notify(bs_sched *s, const void *on);
/* On a task's thread: out (true) it runs beside the others, unscheduled,
 * to wait for them, until it comes back (false) and waits for its turn. */
void bs_sched_outside(bs_sched *s, bool out);

/* The decisions made so far, their hash (FNV-1a over each decision's task
 * and virtual time since the origin: one seed, one hash), and the tasks of
 * the first up to n of them into out (returns how many). */
uint64_t bs_sched_steps(const bs_sched *s);
uint64_t bs_sched_hash(const bs_sched *s);
size_t bs_sched_trace(const bs_sched *s, int *out, size_t n);

#endif
