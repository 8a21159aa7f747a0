/* The bench report: a table for people, a JSON object for machines (every
 * figure keyed by name, so `jq .figures.normal_backup.ratio` reads one).
 * The all-gather figures' GB/s is bus bandwidth: marked "busbw" in the
 * table and "metric": "busbw" in the JSON. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bs_bench.h"
#include "bs_buf.h"

#define GB 1e9

const bs_bench_fig *bs_bench_report_find(const bs_bench_report *r,
                                         const char *name) {
  for (size_t i = 0; r && name && i < r->n; i++)
    if (strcmp(r->fig[i].name, name) == 0)
      return &r->fig[i];
  return NULL;
}

static double s_per_gb(const bs_bench_fig *f) {
  return f->seconds / (f->bytes / GB);
}

static void table_row(bs_buf *b, const bs_bench_report *r,
                      const bs_bench_fig *f) {
  const bs_bench_fig *c = bs_bench_report_find(r, f->ceiling);
  bs_buf_printf(b, "%-20s %10.2f %9.4f  ", f->name, f->gbps, s_per_gb(f));
  if (f->is_ceiling)
    bs_buf_printf(b, "%-18s %10s %7s", "(ceiling)", "", "");
  else if (!c)
    bs_buf_printf(b, "%-18s %10s %7s", "-", "-", "-");
  else
    bs_buf_printf(b, "%-18s %10.2f %7.3f", c->name, c->gbps, f->ratio);
  bs_buf_printf(b, "%s\n", f->busbw ? "  busbw" : "");
}

static bool any_busbw(const bs_bench_report *r) {
  for (size_t i = 0; i < r->n; i++)
    if (r->fig[i].busbw)
      return true;
  return false;
}

char *bs_bench_report_table(const bs_bench_report *r) {
  bs_buf b = {0};
  bs_buf_printf(&b,
                "backstop bench: device %s, backend %s, ranks %d, model %s "
                "(scale %g), %.3f GB of weights in %zu tensors, %d hashing "
                "threads, best of %d\n",
                r->device, r->backend, r->ranks, r->model, r->scale,
                (double)r->weight_bytes / GB, r->tensors, r->threads,
                r->repeat);
  bs_buf_printf(&b, "%-20s %10s %9s  %-18s %10s %7s\n", "figure", "GB/s",
                "s/GB", "ceiling", "GB/s", "ratio");
  for (size_t i = 0; i < r->n; i++)
    table_row(&b, r, &r->fig[i]);
  if (any_busbw(r))
    bs_buf_printf(&b,
                  "busbw: all-gather bus bandwidth (nccl-tests): N x "
                  "per-rank bytes / s x (N-1)/N, N = %d ranks\n",
                  r->ranks);
  return bs_buf_take(&b);
}

static void json_fig(bs_buf *b, const bs_bench_report *r,
                     const bs_bench_fig *f) {
  const bs_bench_fig *c = bs_bench_report_find(r, f->ceiling);
  bs_buf_json_str(b, f->name);
  bs_buf_printf(b, ": {\"kind\": ");
  bs_buf_json_str(b, f->is_ceiling ? "ceiling" : "figure");
  bs_buf_printf(b, ", \"metric\": ");
  bs_buf_json_str(b, f->busbw ? "busbw" : "throughput");
  bs_buf_printf(b, ", \"bytes\": ");
  bs_buf_json_num(b, f->bytes);
  bs_buf_printf(b, ", \"seconds\": ");
  bs_buf_json_num(b, f->seconds);
  bs_buf_printf(b, ", \"gbps\": ");
  bs_buf_json_num(b, f->gbps);
  bs_buf_printf(b, ", \"s_per_gb\": ");
  bs_buf_json_num(b, s_per_gb(f));
  bs_buf_printf(b, ", \"ceiling\": ");
  bs_buf_json_str(b, c ? c->name : NULL);
  bs_buf_printf(b, ", \"ceiling_gbps\": ");
  bs_buf_json_num(b, c ? c->gbps : NAN);
  bs_buf_printf(b, ", \"ratio\": ");
  bs_buf_json_num(b, f->ratio); /* NaN (no ceiling) is written as null */
  bs_buf_printf(b, "}");
}

/* When and where: a performance record is worth little without them. */
static void json_provenance(bs_buf *b) {
  char date[32] = "", host[256] = "";
  time_t t = time(NULL);
  struct tm tm;
  if (gmtime_r(&t, &tm))
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (gethostname(host, sizeof host - 1) != 0)
    host[0] = '\0';
  bs_buf_printf(b, "  \"date\": ");
  bs_buf_json_str(b, date);
  bs_buf_printf(b, ",\n  \"host\": ");
  bs_buf_json_str(b, host);
  bs_buf_printf(b, ",\n");
}

char *bs_bench_report_json(const bs_bench_report *r) {
  bs_buf b = {0};
  bs_buf_printf(&b, "{\n  \"schema\": 1,\n  \"command\": \"bench\",\n");
  bs_buf_printf(&b, "  \"version\": ");
  bs_buf_json_str(&b, BS_VERSION);
  bs_buf_printf(&b, ",\n");
  json_provenance(&b);
  bs_buf_printf(&b, "  \"device\": ");
  bs_buf_json_str(&b, r->device);
  bs_buf_printf(&b, ",\n  \"backend\": ");
  bs_buf_json_str(&b, r->backend);
  bs_buf_printf(&b, ",\n  \"model\": ");
  bs_buf_json_str(&b, r->model);
  bs_buf_printf(&b, ",\n  \"scale\": ");
  bs_buf_json_num(&b, r->scale);
  bs_buf_printf(&b,
                ",\n  \"weight_bytes\": %zu,\n  \"tensors\": %zu,\n"
                "  \"threads\": %d,\n  \"repeat\": %d,\n  \"ranks\": %d,\n",
                r->weight_bytes, r->tensors, r->threads, r->repeat, r->ranks);
  /* The hashing scale factor: T threads over one. */
  const bs_bench_fig *sha = bs_bench_report_find(r, "sha256_verify");
  bs_buf_printf(&b, "  \"sha256_scale\": ");
  bs_buf_json_num(&b, sha ? sha->ratio : NAN);
  bs_buf_printf(&b, ",\n  \"figures\": {");
  for (size_t i = 0; i < r->n; i++) {
    bs_buf_printf(&b, "%s\n    ", i ? "," : "");
    json_fig(&b, r, &r->fig[i]);
  }
  bs_buf_printf(&b, "\n  }\n}\n");
  return bs_buf_take(&b);
}
