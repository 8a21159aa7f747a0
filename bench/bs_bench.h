/* `backstop bench` (docs/cli.md, issue 6): throughput of the framework's own
 * backup, restore, cast, pause/resume and hashing code, each as a ratio to
 * a ceiling measured in the same run on the same buffers (device copy by
 * the copy engine and through the SMs, pinned copies each way, pinned
 * allocation, one-thread SHA256).
 *
 * Every figure is the best of `repeat` timed runs after one untimed
 * warm-up, each run ended by a device sync and timed with
 * CLOCK_MONOTONIC. GB are 1e9 bytes.
 *
 * The MainCast part runs in a world of `ranks` ranks (one thread each, a
 * device, params and optimizer shard per rank) timed in lockstep; above
 * one rank it adds the all-gather figures, whose GB/s is bus bandwidth as
 * nccl-tests defines it for all-gather: busbw = algbw * (N-1)/N, algbw =
 * the gathered bytes (N * per-rank bytes) / seconds. */
#ifndef BS_BENCH_H
#define BS_BENCH_H

#include <stdbool.h>
#include <stddef.h>

#include "bs_err.h"
#include "model/bs_model.h"

#define BS_BENCH_MAX_SCALES 8

typedef struct bs_bench_opts {
  const char *device;  /* "host" or "cuda" */
  const char *backend; /* MainCast's all-gather: "sim" or "nccl"; NULL:
                          nccl on cuda, sim on host (as `backstop run`) */
  const char *model;   /* preset or file; NULL: the synthetic "bench" model */
  double scale;        /* tensor-size factor; 0: chosen to reach gb */
  double gb;           /* weight GB per rank; 0: the device's default */
  int threads;         /* hashing threads; 0: one per online CPU */
  int repeat;          /* timed runs after the warm-up */
  int ranks;           /* MainCast world size, 1..BS_BENCH_MAX_RANKS; 0: 1 */
  const char *json;    /* report file, or NULL */
  int detect;          /* > 0: only the detection figures, this many runs */
  const char *peer;    /* torch_nccl_peer.py for the detection figures */
  int replay;          /* > 0: only the replay figure, of this many ranks */
  int scale_ranks[BS_BENCH_MAX_SCALES]; /* --scale-ranks: world sizes */
  int nscale;     /* > 0: only the large-world figures, at scale_ranks */
  bool campaigns; /* only the campaigns' figures */
  double fuzz_s;  /* their fuzz's budget (default 60 s) */
  const char *sweep_sample; /* their sweep's --sample; NULL: every reach */
} bs_bench_opts;

#define BS_BENCH_MAX_RANKS 64
#define BS_BENCH_NAME_MAX 32
#define BS_BENCH_MAX_FIGS 24

typedef struct bs_bench_fig {
  char name[BS_BENCH_NAME_MAX];
  char ceiling[BS_BENCH_NAME_MAX]; /* "" for a ceiling or an unbounded one */
  bool is_ceiling;
  bool busbw;     /* an all-gather: gbps is its bus bandwidth */
  double bytes;   /* bytes counted per run (all-gather: every rank's) */
  double seconds; /* the best run */
  double gbps;    /* bytes / seconds / 1e9, busbw: times (ranks-1)/ranks */
  double ratio;   /* gbps / the ceiling's gbps; NAN without a ceiling */
} bs_bench_fig;

typedef struct bs_bench_report {
  char device[8];
  char backend[8];
  char model[64];
  double scale;
  size_t weight_bytes; /* synced bytes: one Normal backup */
  size_t tensors;      /* synced tensors */
  int threads, repeat, ranks;
  bs_bench_fig fig[BS_BENCH_MAX_FIGS];
  size_t n;
} bs_bench_report;

/* The command: argv[0] is the command name ("bench"), options follow.
 * Returns the exit status: 0 measured, 1 a measurement failed, 2 a usage
 * error (a one-line message naming the option on stderr). */
int bs_bench_cli_main(int argc, char **argv);

/* Fills defaults, then the options of argv[1..]. BS_ERR_INVALID naming the
 * option on a usage error; *help set by -h/--help. */
bs_status bs_bench_cli_parse(int argc, char **argv, bs_bench_opts *o,
                             bool *help);

/* The communicator of the MainCast world: o->backend, else nccl on cuda
 * and sim on host (as `backstop run`). */
const char *bs_bench_backend(const bs_bench_opts *o);

/* BS_ERR_INVALID naming --ranks when o->ranks is outside 1..64, or above
 * one rank on nccl with fewer GPUs visible than ranks (both numbers in
 * the message). */
bs_status bs_bench_check_ranks(const bs_bench_opts *o);

/* The model the options ask for, sized to o->gb unless o->scale is set;
 * o->scale is then the factor used. */
bs_status bs_bench_model(bs_bench_opts *o, bs_model_spec *out);

/* The single-rank measurements on one device, MainCast's on o->ranks;
 * r is complete only on success. */
bs_status bs_bench_run(const bs_bench_opts *o, const bs_model_spec *m,
                       bs_bench_report *r);

/* The detection figures (bs_bench_detect.c): their table and JSON
 * (caller frees both). */
bs_status bs_bench_detect(const bs_bench_opts *o, char **table, char **json);

/* The large-world figures (bs_bench_scale.c): time, peak memory and verdict
 * of rank-divergence and steady-maincast at each of o->scale_ranks, and the
 * replay at the largest; their table and JSON (caller frees); *passed:
 * every run passed and the replay named the world's culprit. */
bs_status bs_bench_scale(const bs_bench_opts *o, char **table, char **json,
                         bool *passed);

/* The campaigns' figures (bs_bench_campaigns.c): the default suite's wall
 * time, fuzz's runs judged a minute, the full sweep's wall time at 4
 * ranks, each a backstop command of its own; their table and JSON (caller
 * frees); *passed: every command exited 0. */
bs_status bs_bench_campaigns(const bs_bench_opts *o, char **table, char **json,
                             bool *passed);

/* NULL when absent. */
const bs_bench_fig *bs_bench_report_find(const bs_bench_report *r,
                                         const char *name);

/* The human-readable table; the JSON object (caller frees; NULL on OOM). */
char *bs_bench_report_table(const bs_bench_report *r);
char *bs_bench_report_json(const bs_bench_report *r);

#endif
