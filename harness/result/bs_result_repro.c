/* The repro line of a run (bs_result_repro): the one command that runs it
 * again alone. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/bs_scenario.h"
#include "result/bs_result.h"

static void shell_word(bs_buf *b, const char *s) {
  bool plain = *s != '\0';
  for (const char *p = s; *p; p++)
    plain = plain && (isalnum((unsigned char)*p) || strchr("_@%+=:,./-*", *p));
  bs_buf_append(b, " ", 1);
  if (plain) {
    bs_buf_printf(b, "%s", s);
    return;
  }
  bs_buf_append(b, "'", 1);
  for (const char *p = s; *p; p++)
    if (*p == '\'')
      bs_buf_printf(b, "'\\''");
    else
      bs_buf_append(b, p, 1);
  bs_buf_append(b, "'", 1);
}

static void opt(bs_buf *b, const char *name, const char *value) {
  bs_buf_printf(b, " %s", name);
  shell_word(b, value);
}

/* The user's folder: the run's is <it>/<job id> (bs_opts.h). */
static void rendezvous(bs_buf *b, const char *job_dir) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", job_dir);
  char *slash = strrchr(dir, '/');
  if (slash)
    *slash = '\0';
  opt(b, "--rendezvous", dir);
}

/* The shortest text of v that reads back as v (num: 32 bytes at least). */
static const char *shortest(double v, char *num) {
  for (int digits = 6; digits <= 17; digits++) {
    snprintf(num, 32, "%.*g", digits, v);
    if (strtod(num, NULL) == v)
      break;
  }
  return num;
}

/* Always the schedule, so that a repro line runs the same history
 * whatever the default becomes; its seed where it is not --seed's. */
static void schedule(bs_buf *b, const bs_run *cfg) {
  char spec[32];
  bs_sched_spec_format(&cfg->schedule, spec, sizeof spec);
  opt(b, "--schedule", spec);
  if (cfg->schedule.policy != BS_SCHED_THREADS &&
      cfg->schedule.seed != cfg->seed)
    bs_buf_printf(b, " --schedule-seed %llu",
                  (unsigned long long)cfg->schedule.seed);
}

void bs_result_repro(const bs_run *cfg, bs_buf *b) {
  const char *model = cfg->model_name;
  const bs_scenario *s = cfg->scn;
  char num[64];
  if (cfg->nprocs > 1 && !cfg->spawned)
    bs_buf_printf(b, "mpirun -np %d ", cfg->nprocs);
  bs_buf_printf(b, "backstop run");
  shell_word(b, s->name);
  bs_buf_printf(b, " --ranks %d --seed %llu", cfg->ranks,
                (unsigned long long)cfg->seed);
  schedule(b, cfg);
  if (strcmp(cfg->backend, "sim") != 0)
    opt(b, "--backend", cfg->backend);
  if (strcmp(cfg->device, strcmp(cfg->backend, "sim") ? "cuda" : "host"))
    opt(b, "--device", cfg->device);
  if (!s->model || strcmp(model, s->model) != 0)
    opt(b, "--model", model);
  if (cfg->scale != 1.0)
    opt(b, "--scale", shortest(cfg->scale, num));
  if (cfg->cycles != s->cycles)
    bs_buf_printf(b, " --cycles %d", cfg->cycles);
  if (cfg->timeout_ms > 0 && cfg->timeout_ms != s->timeout_ms)
    bs_buf_printf(b, " --timeout-ms %d", cfg->timeout_ms);
  /* A deadline decides a hang (and whether a slow watchdog got its turn). */
  if (cfg->deadline_s > 0 && cfg->deadline_s != BS_RUN_DEADLINE_S)
    bs_buf_printf(b, " --deadline-s %s", shortest(cfg->deadline_s, num));
  for (size_t i = 0; i < cfg->nsets; i++)
    opt(b, "--set", cfg->sets[i]);
  for (size_t i = cfg->nown; i < cfg->nfaults; i++)
    opt(b, "--fault", cfg->faults[i].text);
  for (size_t i = 0; i < cfg->nmutants; i++)
    opt(b, "--mutant", bs_mutant_name(cfg->mutants[i]));
  if (cfg->spawned || cfg->spawn) /* the spawned processes', or the parent's */
    bs_buf_printf(b, " --spawn");
  else if (cfg->rendezvous)
    rendezvous(b, cfg->rendezvous);
}
