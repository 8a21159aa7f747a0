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
#include "bs_json_write.h"

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
  bs_json_write_str(b, f->name);
  bs_json_write_field_str(b, ": {", "kind",
                          f->is_ceiling ? "ceiling" : "figure");
  bs_json_write_field_str(b, ", ", "metric", f->busbw ? "busbw" : "throughput");
  bs_json_write_field_num(b, ", ", "bytes", f->bytes);
  bs_json_write_field_num(b, ", ", "seconds", f->seconds);
  bs_json_write_field_num(b, ", ", "gbps", f->gbps);
  bs_json_write_field_num(b, ", ", "s_per_gb", s_per_gb(f));
  bs_json_write_field_str(b, ", ", "ceiling", c ? c->name : NULL);
  bs_json_write_field_num(b, ", ", "ceiling_gbps", c ? c->gbps : NAN);
  /* NaN (no ceiling) is written as null */
  bs_json_write_field_num(b, ", ", "ratio", f->ratio);
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
  bs_json_write_field_str(b, "  ", "date", date);
  bs_json_write_field_str(b, ",\n  ", "host", host);
  bs_buf_printf(b, ",\n");
}

char *bs_bench_report_json(const bs_bench_report *r) {
  bs_buf b = {0};
  bs_buf_printf(&b, "{\n  \"schema\": 1,\n  \"command\": \"bench\",\n");
  bs_json_write_field_str(&b, "  ", "version", BS_VERSION);
  bs_buf_printf(&b, ",\n");
  json_provenance(&b);
  bs_json_write_field_str(&b, "  ", "device", r->device);
  bs_json_write_field_str(&b, ",\n  ", "backend", r->backend);
  bs_json_write_field_str(&b, ",\n  ", "model", r->model);
  bs_json_write_field_num(&b, ",\n  ", "scale", r->scale);
  bs_buf_printf(&b,
                ",\n  \"weight_bytes\": %zu,\n  \"tensors\": %zu,\n"
                "  \"threads\": %d,\n  \"repeat\": %d,\n  \"ranks\": %d,\n",
                r->weight_bytes, r->tensors, r->threads, r->repeat, r->ranks);
  /* The hashing scale factor: T threads over one. */
  const bs_bench_fig *sha = bs_bench_report_find(r, "sha256_verify");
  bs_json_write_field_num(&b, "  ", "sha256_scale", sha ? sha->ratio : NAN);
  bs_buf_printf(&b, ",\n  \"figures\": {");
  for (size_t i = 0; i < r->n; i++) {
    bs_buf_printf(&b, "%s\n    ", i ? "," : "");
    json_fig(&b, r, &r->fig[i]);
  }
  bs_buf_printf(&b, "\n  }\n}\n");
  return bs_buf_take(&b);
}
