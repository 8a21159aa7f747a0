#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bs_digest.h"
#include "bs_file.h"
#include "catalog/bs_scenario.h"
#include "comm/bs_comm.h"
#include "dumps/bs_dumps.h"
#include "report/bs_artifacts.h"
#include "report/bs_report.h"
#include "report/bs_trace.h"

/* Whole or not at all: under a launcher two processes may write one rank's
 * flight recorder (its own dump, then process 0 from its part). */
static bs_status save_str(const char *path, const char *text) {
  return bs_file_publish(path, text, strlen(text));
}

/* Whether the run's repro line says more than its scenario, size, seed,
 * default schedule and mutants (its faults, settings, cycles, deadline,
 * process mode, another schedule...). */
static bool has_options(const bs_run *cfg) {
  bs_run plain = *cfg;
  bs_buf b = {0};
  plain.nmutants = 0;
  bs_result_repro(&plain, &b);
  const char *seed = strstr(bs_buf_str(&b), " --seed ");
  const char *rest = seed ? seed + 8 + strspn(seed + 8, "0123456789") : "";
  bool more = strncmp(bs_buf_str(&b), "backstop run ", 13) != 0 || !seed ||
              (*rest && strcmp(rest, " --schedule random") != 0);
  bs_buf_free(&b);
  return more;
}

void bs_artifacts_run_dir(const bs_run *cfg, char *out, size_t n) {
  int len = snprintf(out, n, "%s/%s-r%d-s%llu", cfg->artifacts, cfg->scn->name,
                     cfg->ranks, (unsigned long long)cfg->seed);
  for (size_t i = 0; i < cfg->nmutants && len >= 0 && (size_t)len < n; i++)
    len += snprintf(out + len, n - (size_t)len, "-%s",
                    bs_mutant_name(cfg->mutants[i]));
  bs_buf b = {0};
  bs_digest d;
  char hex[65];
  bs_result_repro(cfg, &b);
  if (has_options(cfg) && len >= 0 && (size_t)len < n &&
      bs_digest_sha256(b.s, b.len, &d) == BS_OK) {
    bs_digest_hex(&d, hex);
    len += snprintf(out + len, n - (size_t)len, "-%.8s", hex);
  } else {
    bs_err_clear();
  }
  if (cfg->repeat && len >= 0 && (size_t)len < n)
    snprintf(out + len, n - (size_t)len, "-%d", cfg->repeat + 1);
  bs_buf_free(&b);
}

bs_status bs_artifacts_clear(const bs_run *cfg) {
  char base[768];
  if (!cfg->artifacts)
    return BS_OK;
  bs_artifacts_run_dir(cfg, base, sizeof base);
  return bs_file_remove_tree(base);
}

/* The pickle PyTorch would have written for this dump (torchfrtrace reads
 * it as it is): rank_<R>; its JSON copy is
 * BS_DUMPS_JSON_DIR/rank<R>.flight.json, a name torchfrtrace skips (it takes
 * files that contain "rank_"). */
static bs_status save_pickle(const char *path, const char *json) {
  bs_status st = BS_OK;
  bs_buf b = {0};
  BS_CHECK(bs_dumps_pickle(json, &b));
  BS_CHECK(bs_file_publish(path, b.s, b.len));
out:
  bs_buf_free(&b);
  return st;
}

/* Rank k's flight recorder, whole (the record holds it marked:
 * bs_world_flight_json_marked), as a pickle in base and as JSON in its
 * BS_DUMPS_JSON_DIR. */
static bs_status write_flight(const char *base, const char *marked, int k,
                              bs_result *res) {
  bs_status st = BS_OK;
  char path[1024], *dump = bs_world_flight_expand(marked);
  if (!dump)
    BS_FAIL(BS_ERR_NOMEM, NULL, "artifacts: rank %d's flight recorder", k);
  /* The JSON lists the pickles: what PyTorch's tools read. */
  snprintf(path, sizeof path, "%s/rank_%d", base, k);
  BS_CHECK(save_pickle(path, dump));
  BS_CHECK(bs_result_add_flight(res, path));
  snprintf(path, sizeof path, "%s/%s/rank%d.flight.json", base,
           BS_DUMPS_JSON_DIR, k);
  BS_CHECK(save_str(path, dump));
out:
  free(dump);
  return st;
}

/* Each rank's flight recorder, in base (made). */
static bs_status write_flights(const char *base, const bs_record *rec,
                               bs_result *res) {
  bs_status st = BS_OK;
  char json[1024];
  snprintf(json, sizeof json, "%s/%s", base, BS_DUMPS_JSON_DIR);
  BS_CHECK(bs_file_mkdir_p(json));
  for (int k = 0; k < rec->nranks; k++)
    if (rec->rank[k].flight)
      BS_CHECK(write_flight(base, rec->rank[k].flight, k, res));
out:
  return st;
}

bs_status bs_artifacts_write_flights(const bs_run *cfg, const bs_record *rec,
                                     bs_result *res) {
  char base[768];
  bs_artifacts_run_dir(cfg, base, sizeof base);
  return write_flights(base, rec, res);
}

bs_status bs_artifacts_write(const bs_run *cfg, const bs_record *rec,
                             bs_result *res) {
  bs_status st = BS_OK;
  char base[768], path[1024];
  bs_buf trace = {0};
  bs_artifacts_run_dir(cfg, base, sizeof base);
  BS_CHECK(write_flights(base, rec, res));
  snprintf(path, sizeof path, "%s/trace.json", base);
  bs_trace_json(&trace, rec, res->repro ? res->repro : res->scenario);
  BS_CHECK(bs_report_save(path, &trace));
  if (!(res->trace = strdup(path)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "artifacts: out of memory");
  if (rec->world_report && rec->world_report[0]) {
    snprintf(path, sizeof path, "%s/report.txt", base);
    BS_CHECK(save_str(path, rec->world_report));
    if (!(res->report = strdup(path)))
      BS_FAIL(BS_ERR_NOMEM, NULL, "artifacts: out of memory");
  }
out:
  bs_buf_free(&trace);
  return st;
}
