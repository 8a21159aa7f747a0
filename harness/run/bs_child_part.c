#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bs_file.h"
#include "driver/bs_driver.h"
#include "record/bs_record_part.h"
#include "run/bs_child.h"
#include "run/bs_child_part.h"
#include "run/bs_fork.h"
#include "run/bs_launcher.h"

/* Process 0 stops waiting for parts this early, the others for its verdict
 * later: both before the parent's kill at the deadline. */
#define LEAD_MARGIN 0.15
#define PEER_MARGIN 0.05

typedef struct proc_run {
  const bs_run_cfg *cfg;
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
  snprintf(out, n, "%s/result.json", p->dir);
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
  const bs_run_cfg *cfg = p->cfg;
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

/* Process 0: every other process's part, merged; a part that does not come
 * in time leaves its ranks not returned (the liveness oracle says so). */
static void gather(proc_run *p) {
  char *own = p->rec.world_report;
  p->rec.world_report = NULL;
  if (p->rec.nranks &&
      bs_record_part_add_report(&p->rec, 0, bs_launcher_local_ranks(p->cfg),
                                own) != BS_OK)
    bs_err_clear();
  free(own);
  for (int q = 1; q < p->cfg->nprocs; q++) {
    char path[1100], *data = NULL;
    size_t n = 0;
    part_path(p, q, path, sizeof path);
    bs_err_clear();
    bs_status st = bs_file_wait(path, wait_left_ms(p, LEAD_MARGIN), &data, &n);
    if (st == BS_OK)
      st = bs_record_part_merge(&p->rec, data, n, path);
    if (st != BS_OK) {
      char name[32];
      snprintf(name, sizeof name, "process %d part", q);
      bs_record_check(&p->rec, name, false, "%s", bs_err()->message);
      bs_err_clear();
    }
    free(data);
  }
}

static int send_json(int fd, const char *s, size_t n) {
  return bs_fork_write_all(fd, s, n) ? 0 : 5;
}

static int lead(proc_run *p, int fd) {
  char path[1100];
  bs_buf out = {0};
  gather(p);
  setup_check(p, bs_driver_inspect(p->cfg, &p->rec), "inspect");
  p->rec.duration_ms = bs_record_now_ms(&p->rec);
  bs_child_judge(p->cfg, BS_OK, &p->rec, &p->res);
  bs_result_write_json(&out, &p->res, 0);
  result_path(p, path, sizeof path);
  if (!out.oom && bs_file_publish(path, out.s, out.len) != BS_OK)
    fprintf(stderr, "backstop: %s\n", bs_err()->message);
  int rc = out.oom ? 5 : send_json(fd, out.s, out.len);
  bs_buf_free(&out);
  return rc;
}

/* This process's own failure as the run's result. */
static int fail_run(proc_run *p, int fd, const char *why) {
  bs_buf out = {0};
  p->res.verdict = BS_FAIL;
  bs_result_set_note(&p->res, "process %d: %s", p->cfg->proc, why);
  bs_result_write_json(&out, &p->res, 0);
  int rc = out.oom ? 5 : send_json(fd, out.s, out.len);
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
  if (bs_file_wait(path, wait_left_ms(p, PEER_MARGIN), &data, &n) == BS_OK) {
    rc = send_json(fd, data, n);
  } else {
    snprintf(why, sizeof why, "no verdict from process 0: %s",
             bs_err()->message);
    rc = fail_run(p, fd, why);
  }
  free(data);
  return rc;
}

/* A verdict already in the run's folder is an earlier job's (a job id used
 * twice): a peer would report it as this run's. */
static bs_status fresh_folder(const proc_run *p) {
  char path[1100];
  bs_status st = bs_file_mkdir_p(p->dir);
  result_path(p, path, sizeof path);
  if (st == BS_OK && access(path, F_OK) == 0)
    st =
        bs_err_fail(BS_ERR_INVALID, NULL,
                    "%s holds an earlier job's verdict (a job id used twice?): "
                    "give a fresh --rendezvous folder",
                    p->dir);
  return st;
}

int bs_child_part_run(const bs_run_cfg *cfg, int fd) {
  proc_run p = {.cfg = cfg};
  int rc = 4;
  bs_launcher_run_dir(cfg, p.dir, sizeof p.dir);
  if (bs_result_from_cfg(cfg, &p.res) != BS_OK)
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
  drive(&p);
  if (publish_part(&p) != BS_OK)
    fprintf(stderr, "backstop: process %d: %s\n", cfg->proc, bs_err()->message);
  rc = cfg->proc == 0 ? lead(&p, fd) : peer(&p, fd);
out:
  bs_result_free(&p.res);
  bs_record_free(&p.rec);
  return rc;
}
