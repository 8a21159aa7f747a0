/* The lifecycle driver: builds a world of N ranks, arms the run's faults
 * and mutants, drives every rank's actor through init and the colocated
 * RL cycle, and records each phase's outcome and the state at its end
 * (bs_record.h). It never judges: the oracles do, from the record. */
#ifndef BS_DRIVER_H
#define BS_DRIVER_H

#include "catalog/bs_run.h"
#include "catalog/bs_scenario.h"
#include "record/bs_record.h"

/* Arms the run's faults (the scenario's, then the user's: their order is
 * the firing log's spec index) and sets its mutants' switches. */
bs_status bs_driver_arm(const bs_run *cfg);
void bs_driver_disarm(void);

/* The budget and pause rule of a validated configuration (what the memory
 * and pause-safety oracles hold the run to). */
bs_budget bs_driver_budget(const bs_config *c, const bs_model_spec *m);
bs_pause_rule bs_driver_pause_rule(const bs_config *c);

/* The standard lifecycle, on every rank:
 *   init; for each cycle: update_weights, wake_up, restore, train_step,
 *   sleep (under offload_train, as the real job).
 * After an agreed engine death the engine is restarted and the cycle goes
 * on (so the next sync checks the recovery); any other failure ends the
 * run, as the real job would stop. Returns a setup failure (no world, bad
 * model); what the core did is in rec, whatever it was. */
bs_status bs_driver_lifecycle(const bs_run *cfg, bs_record *rec);

/* What a scheduled world does at the run's deadline on its virtual clock
 * (bs_world_opts.past): past(ctx), every rank parked; it ends the process
 * (the run's hang dump: run/bs_hangdump.h). NULL: no virtual deadline
 * (set by the process that runs the ranks, before bs_driver_run). */
void bs_driver_set_deadline(void (*past)(void *ctx), void *ctx);

/* The scenario's driver (its own or the lifecycle), with its faults and
 * mutants armed around it. */
bs_status bs_driver_run(const bs_run *cfg, bs_record *rec);

/* Whether faults beyond the scenario's were armed: the user's --fault,
 * fiu-run's commands, or a firing nothing of ours armed (fiu-ctrl). The
 * scenario's expectation and inspection describe its own faults only. */
bool bs_driver_user_faults(const bs_run *cfg, const bs_record *rec);

/* The watchdog waits the run's faults make it sit out, at least, in ms
 * (0: none): a skipped init is waited out for up to twice the timeout
 * (every rank may skip it: comm/init_skip), a late init or a stall lasts
 * its failinfo each time it fires; why names the largest. A deadline
 * shorter than this kills a run whose watchdog was never late. */
double bs_driver_waits_ms(const bs_run *cfg, char *why, size_t n);

/* The scenario's inspect hook on the whole record (in a process-per-rank
 * run, once process 0 has merged every part); nothing with user faults. */
bs_status bs_driver_inspect(const bs_run *cfg, bs_record *rec);

#endif
