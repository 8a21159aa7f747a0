#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bs_file.h"
#include "bs_fork.h"
#include "catalog/bs_launcher.h"
#include "catalog/bs_scenario.h"
#include "comm/bs_comm.h"
#include "driver/bs_driver.h"
#include "dumps/bs_dumps_report.h"
#include "record/bs_record_part.h"
#include "report/bs_artifacts.h"
#include "run/bs_child_judge.h"
#include "run/bs_child_part.h"
#include "run/bs_child_procs.h"
#include "run/bs_hangdump.h"
#include "run/bs_parent.h"

/* Process 0 stops waiting for parts this early, the others for its verdict
 * later: both before the parent's kill at the deadline. */
#define LEAD_MARGIN 0.15
#define PEER_MARGIN 0.05

typedef struct proc_run {
  const bs_run *cfg;
  pid_t *procs; /* the other processes, when this one started them */
  char dir[1024];
  bs_record rec;
  bs_result res;
} proc_run;

static int wait_left_ms(const proc_run *p, double margin) {
  double left = p->rec.deadline_ms * (1 - margin) - bs_record_now_ms(&p->rec);
  return left > 0 ? (int)left : 0;
}

static void part_path(const proc_run *p, int proc, char *out, size_t n) {
  snprintf(out, n, "%s/part%d", p->dir, proc);
}

static void result_path(const proc_run *p, char *out, size_t n) {
  snprintf(out, n, "%s/result.bin", p->dir);
}

/* A setup failure becomes a check, so that process 0 reports it. */
static void setup_check(proc_run *p, bs_status st, const char *what) {
  char why[400], name[48];
  if (st == BS_OK)
    return;
  bs_err_format(bs_err(), why, sizeof why);
  bs_err_clear();
  snprintf(name, sizeof name, "process %d %s", p->cfg->proc, what);
  bs_record_check(&p->rec, name, false, "%s", why);
}

/* Drives this process's ranks (a custom driver, which keeps all its ranks
 * in one process, runs in process 0 alone). */
static void drive(proc_run *p) {
  const bs_run *cfg = p->cfg;
  if (cfg->proc == 0 || !cfg->scn->drive)
    setup_check(p, bs_driver_run(cfg, &p->rec), "setup");
}

static bs_status publish_part(proc_run *p) {
  bs_status st = BS_OK;
  char path[1100];
  bs_buf b = {0};
  int first = bs_launcher_first_rank(p->cfg);
  int n = p->rec.nranks ? bs_launcher_local_ranks(p->cfg) : 0;
  bs_record_part_write(&p->rec, n ? first : 0, n, &b);
  if (b.oom)
    BS_FAIL(BS_ERR_NOMEM, NULL, "record part of process %d", p->cfg->proc);
  part_path(p, p->cfg->proc, path, sizeof path);
  BS_CHECK(bs_file_publish(path, b.s, b.len));
out:
  bs_buf_free(&b);
  return st;
}

/* Process 0's own report in r, under the line that names its ranks, as
 * the merged parts' are. */
static void own_report(const proc_run *p, bs_record *r) {
  char *own = r->world_report;
  r->world_report = NULL;
  if (r->nranks && bs_record_part_add_report(
                       r, 0, bs_launcher_local_ranks(p->cfg), own) != BS_OK)
    bs_err_clear();
  free(own);
}

/* The part at path merged into r (data: its bytes, freed), or the failure
 * to get it (st, bs_err()). */
static bs_status merge(bs_record *r, bs_status st, char *data, size_t n,
                       const char *path) {
  if (st == BS_OK)
    st = bs_record_part_merge(r, data, n, path);
  free(data);
  return st;
}

/* Process 0: every other process's part, merged; a part that does not come
 * in time leaves its ranks not returned (the liveness oracle says so). */
static void gather(proc_run *p) {
  own_report(p, &p->rec);
  for (int q = 1; q < p->cfg->nprocs; q++) {
    char path[1100], *data = NULL;
    size_t n = 0;
    part_path(p, q, path, sizeof path);
    bs_err_clear();
    bs_status st = bs_file_wait(path, wait_left_ms(p, LEAD_MARGIN), &data, &n);
    if (merge(&p->rec, st, data, n, path) != BS_OK) {
      char name[32];
      snprintf(name, sizeof name, "process %d part", q);
      bs_record_check(&p->rec, name, false, "%s", bs_err()->message);
      bs_err_clear();
    }
  }
}

/* ---- asked to dump at the deadline (bs_hangdump.h) ----
 * Every process dumps its own ranks: with --spawn process 0, which the
 * parent asks, passes the signal on to the processes it started; under a
 * launcher each process's own parent asks it at its own deadline, and
 * process 0, asked at its own, asks the others through the run's folder
 * (dump.asked, looked for every 10 ms): one started later than process 0
 * dumps then, not past process 0's grace. A process other than 0 publishes
 * its dump as dump<p> in the run's folder; a launcher's also writes its
 * ranks' flight recorders into the artifacts folder itself, before that
 * (so they are there even when its dump comes too late for process 0).
 * Process 0 waits for each, within half the parent's grace, and writes the
 * artifacts of them all: a process whose ranks had finished gave its whole
 * part already (part<p>), and one that sent nothing in time is named in the
 * report. Then
 * each waits for its kill: a process that exited would be a dead rank to the
 * others, and one not yet asked would report that instead of where its ranks
 * hung; only a process 0 that started the others ends them all at once. */

static void dump_path(const proc_run *p, int proc, char *out, size_t n) {
  snprintf(out, n, "%s/dump%d", p->dir, proc);
}

static bool exists(const void *path) {
  return access(path, F_OK) == 0;
}

static void asked_path(const proc_run *p, char *out, size_t n) {
  snprintf(out, n, "%s/dump.asked", p->dir);
}

/* A bs_hangdump_asked_fn: process 0 has asked for the dumps. */
static bool dump_asked(void *arg) {
  char path[1100];
  asked_path(arg, path, sizeof path);
  return exists(path);
}

/* Under a launcher, the others' dumps now, whatever their own deadlines. */
static void ask_dumps(const proc_run *p) {
  char path[1100];
  static const char note[] = "process 0 passed its deadline\n";
  asked_path(p, path, sizeof path);
  if (bs_file_publish(path, note, sizeof note - 1) != BS_OK) {
    fprintf(stderr, "backstop: process 0: %s\n", bs_err()->message);
    bs_err_clear();
  }
}

/* Process q's ranks into d: its part when there is one, else its dump,
 * waited for until the record's clock reads until_ms. */
static void dump_gather_one(const proc_run *p, bs_record *d, int q,
                            double until_ms) {
  char part[1100], dump[1100], *data = NULL, line[1400];
  size_t n = 0;
  int left = (int)(until_ms - bs_record_now_ms(d));
  part_path(p, q, part, sizeof part);
  dump_path(p, q, dump, sizeof dump);
  bs_err_clear();
  bs_status st =
      bs_file_wait_or(dump, left > 0 ? left : 0, exists, part, &data, &n);
  bool whole = exists(part);
  if (whole) { /* finished ranks: the whole record, not the dump's */
    free(data);
    data = NULL;
    bs_err_clear();
    st = bs_file_read(part, &data, &n);
  }
  if (merge(d, st, data, n, whole ? part : dump) == BS_OK)
    return;
  int k = bs_launcher_local_ranks(p->cfg);
  snprintf(line, sizeof line,
           "backstop: no dump from this process in time: %s\n",
           bs_err()->message);
  bs_err_clear();
  if (bs_record_part_add_report(d, q * k, k, line) != BS_OK)
    bs_err_clear();
}

/* Where every rank was, from all their flight recorders at once (the
 * block `backstop analyze` prints: each process saw its own ranks only),
 * put before the processes' blocks; nothing when they do not read. */
static void world_block(bs_record *d) {
  bs_dumps_verdict v = {0};
  bs_buf b = {0};
  /* Whole: the record holds them marked (bs_world_flight_json_marked). */
  char **whole = calloc((size_t)d->nranks, sizeof *whole);
  const char **flights = calloc((size_t)d->nranks, sizeof *flights);
  for (int k = 0; whole && flights && k < d->nranks; k++)
    flights[k] = whole[k] = bs_world_flight_expand(d->rank[k].flight);
  if (whole && flights &&
      bs_dumps_report_flights(flights, d->nranks, &v) == BS_OK) {
    bs_buf_printf(&b, "every rank, from their flight recorders:\n%s\n%s",
                  v.text, d->world_report ? d->world_report : "");
    if (!b.oom) {
      free(d->world_report);
      d->world_report = bs_buf_take(&b);
    }
  }
  bs_err_clear();
  for (int k = 0; whole && k < d->nranks; k++)
    free(whole[k]);
  free(whole);
  free(flights);
  bs_buf_free(&b);
  bs_dumps_report_verdict_free(&v);
}

/* Process 0's share: its own ranks (their part when they had finished),
 * then every other process's, within half the grace. */
static void dump_lead(const proc_run *p, bs_record *d) {
  const bs_run *cfg = p->cfg;
  char part[1100], *data = NULL;
  size_t n = 0;
  double until = bs_record_now_ms(d) + bs_parent_grace_s(cfg->deadline_s) * 500;
  for (int q = 1; p->procs && q < cfg->nprocs; q++)
    if (p->procs[q] > 0)
      kill(p->procs[q], BS_DUMP_SIGNAL);
  if (!p->procs)
    ask_dumps(p);
  part_path(p, 0, part, sizeof part);
  if (!exists(part) ||
      merge(d, bs_file_read(part, &data, &n), data, n, part) != BS_OK) {
    bs_err_clear();
    if (!d->world_report)
      d->world_report = strdup("backstop: no world of this process was "
                               "running\n");
    own_report(p, d);
  }
  for (int q = 1; q < cfg->nprocs; q++)
    dump_gather_one(p, d, q, until);
  world_block(d);
}

/* Another process's share: its dump, and under a launcher its ranks'
 * flight recorders in the artifacts folder (a spawned one's dump is
 * waited for by the process that asked it). */
static void dump_peer(const proc_run *p, bs_record *d, bs_result *res) {
  char path[1100];
  bs_buf b = {0};
  int n = bs_launcher_local_ranks(p->cfg);
  if (p->cfg->artifacts && !p->cfg->spawned &&
      bs_artifacts_write_flights(p->cfg, d, res) != BS_OK)
    bs_child_judge_unwritten(res);
  bs_record_part_write(d, bs_launcher_first_rank(p->cfg), n, &b);
  dump_path(p, p->cfg->proc, path, sizeof path);
  if (b.oom || bs_file_publish(path, b.s, b.len) != BS_OK)
    fprintf(stderr, "backstop: process %d: its dump: %s\n", p->cfg->proc,
            b.oom ? "out of memory" : bs_err()->message);
  bs_buf_free(&b);
}

static int dump_part(bs_record *d, bs_result *res, void *arg) {
  const proc_run *p = arg;
  if (p->cfg->proc != 0) {
    if (!p->cfg->scn->drive) /* else every rank is process 0's (drive()) */
      dump_peer(p, d, res);
    return BS_HANGDUMP_STAY;
  }
  if (!p->cfg->scn->drive)
    dump_lead(p, d);
  if (p->procs) /* they gave what they had: the run ends here */
    bs_child_procs_end(p->procs, p->cfg->nprocs, p->cfg->rendezvous, true);
  /* Processes it started are ended now; a launcher's, by their parents. */
  return BS_HANGDUMP_WRITE | (p->procs ? 0 : BS_HANGDUMP_STAY);
}

static int send_result(int fd, const char *s, size_t n) {
  return bs_fork_write_all(fd, s, n) ? 0 : 5;
}

static int lead(proc_run *p, int fd) {
  char path[1100];
  bs_buf out = {0};
  gather(p);
  setup_check(p, bs_driver_inspect(p->cfg, &p->rec), "inspect");
  p->rec.duration_ms = bs_record_now_ms(&p->rec);
  bs_hangdump_end(); /* before judging: a dump that began writes instead */
  bs_child_judge(p->cfg, BS_OK, &p->rec, &p->res);
  bs_result_pack(&out, &p->res);
  result_path(p, path, sizeof path);
  if (!out.oom && bs_file_publish(path, out.s, out.len) != BS_OK)
    fprintf(stderr, "backstop: %s\n", bs_err()->message);
  int rc = out.oom ? 5 : send_result(fd, out.s, out.len);
  bs_buf_free(&out);
  return rc;
}

/* This process's own failure as the run's result. */
static int fail_run(proc_run *p, int fd, const char *why) {
  bs_buf out = {0};
  p->res.verdict = BS_FAIL;
  bs_result_set_note(&p->res, "process %d: %s", p->cfg->proc, why);
  bs_result_pack(&out, &p->res);
  int rc = out.oom ? 5 : send_result(fd, out.s, out.len);
  bs_buf_free(&out);
  return rc;
}

/* The others report process 0's verdict, or their own failure to get it. */
static int peer(proc_run *p, int fd) {
  char path[1100], *data = NULL, why[400];
  size_t n = 0;
  int rc;
  result_path(p, path, sizeof path);
  bs_err_clear();
  bs_status st = bs_file_wait(path, wait_left_ms(p, PEER_MARGIN), &data, &n);
  bs_hangdump_end();
  if (st == BS_OK) {
    rc = send_result(fd, data, n);
  } else {
    snprintf(why, sizeof why, "no verdict from process 0: %s",
             bs_err()->message);
    rc = fail_run(p, fd, why);
  }
  free(data);
  return rc;
}

/* A verdict already in the run's folder is an earlier job's (a job id used
 * twice, by fewer processes: bs_launcher_claim refuses the others): a peer
 * would report it as this run's. */
static bs_status fresh_folder(const proc_run *p) {
  char path[1100];
  bs_status st = bs_file_mkdir_p(p->dir);
  result_path(p, path, sizeof path);
  if (st == BS_OK && exists(path))
    st =
        bs_err_fail(BS_ERR_INVALID, NULL,
                    "%s holds an earlier job's verdict (a job id used twice?): "
                    "give a fresh --rendezvous folder",
                    p->dir);
  return st;
}

int bs_child_part_run(const bs_run *cfg, int fd, pid_t *procs) {
  proc_run p = {.cfg = cfg, .procs = procs};
  int rc = 4;
  bs_launcher_run_dir(cfg, p.dir, sizeof p.dir);
  if (bs_result_from_run(cfg, &p.res) != BS_OK)
    return rc;
  if (bs_record_init(&p.rec, cfg->scn->drive ? 0 : cfg->ranks, cfg->cycles) !=
      BS_OK)
    goto out;
  p.rec.deadline_ms = cfg->deadline_s * 1e3;
  bs_err_clear();
  if (fresh_folder(&p) != BS_OK) {
    rc = fail_run(&p, fd, bs_err()->message);
    goto out;
  }
  /* A launcher's peer is asked by its own parent, or by process 0. */
  bool by_lead = cfg->proc != 0 && !cfg->spawned;
  if (bs_hangdump_start(cfg, &p.rec, fd, dump_part, by_lead ? dump_asked : NULL,
                        &p) != BS_OK) {
    rc = fail_run(&p, fd, bs_err()->message);
    goto out;
  }
  drive(&p);
  if (publish_part(&p) != BS_OK)
    fprintf(stderr, "backstop: process %d: %s\n", cfg->proc, bs_err()->message);
  rc = cfg->proc == 0 ? lead(&p, fd) : peer(&p, fd);
out:
  bs_result_free(&p.res);
  bs_record_free(&p.rec);
  return rc;
}
