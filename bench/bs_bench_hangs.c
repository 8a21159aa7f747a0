/* `backstop bench --hangs N` (bs_bench_hangs.h): the corpus scored. */
#include "bs_bench_hangs.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bs_bench_exec.h"
#include "bs_bench_impl.h"
#include "bs_bench_trace.h"
#include "bs_file.h"
#include "bs_fork.h"
#include "bs_num.h"
#include "bs_sched_spec.h"
#include "dumps/bs_corpus.h"
#include "dumps/bs_dumps.h"
#include "dumps/bs_dumps_report.h"
#include "dumps/bs_replay.h"

typedef struct hangs_opts {
  /* the numbers' options (hangs_numbers) */
  long count, seed, from, min_ranks, max_ranks, settle_ms, timeout_ms,
      frt_sample;
  long keep_ranks;      /* only those of so many ranks at most (0: all) */
  long jobs;            /* programs scored at once, each in a child */
  const char *keep;     /* each program's files kept here */
  const char *score;    /* folders of torch-written dumps to score instead */
  const char *frt;      /* torchfrtrace, "" for none */
  const char *schedule; /* replay's world: random (default), pct:D, threads */
  bs_corpus_limits lim;
  bool check, spawn;
} hangs_opts;

typedef struct hangs_tally {
  long programs, analyze, replay, reproduced, spawn, spawn_reproduced, frt,
      frt_run;
  long outputs, outputs_bad;
  long ranks_sum;
  double t_make, t_sim, t_analyze, t_replay;
} hangs_tally;

static const char hangs_usage[] =
    "usage: backstop bench --hangs N [--seed S] [--from I] [--min-ranks M]\n"
    "                      [--max-ranks M] [--check] [--keep DIR\n"
    "                      [--keep-ranks M]]\n"
    "                      [--torchfrtrace PATH [--frt-sample K]]\n"
    "                      [--settle-ms T] [--timeout-ms T]\n"
    "                      [--schedule random|pct:D|threads]\n"
    "       backstop bench --hangs 0 --score DIR [--spawn] [--check]\n"
    "  --hangs    score N corpus programs (hung and diverged jobs drawn from\n"
    "             the seed, 4..512 ranks), analyze and replay of each\n"
    "  --seed     the corpus (default 1); --from: its first program (0)\n"
    "  --min-ranks, --max-ranks  the world sizes drawn (4..512)\n"
    "  --check    also each --graph through dot -Tsvg, each --trace by the\n"
    "             trace rules\n"
    "  --keep     each program's program.json, truth.json, dumps and\n"
    "             outputs under DIR/s<seed>-p<index>/ (--keep-ranks: of\n"
    "             those of M ranks at most: tests/fr_torch_prog.py runs them)\n"
    "  --torchfrtrace  score PyTorch's analyzer too, on the first K\n"
    "             programs (--frt-sample, default 100)\n"
    "  --jobs     programs scored at once, each chunk of 20 in a child\n"
    "             (default: one per CPU)\n"
    "  --settle-ms  replay ends once no rank can move (threads: once none\n"
    "             moved for T ms, default 10)\n"
    "  --schedule   replay's ranks one at a time on virtual time (random,\n"
    "             the default, or pct:D), or real threads (threads)\n"
    "  --timeout-ms replay's watchdog (default 2000)\n"
    "  --score    instead: every sub-folder of DIR holding truth.json (dumps\n"
    "             PyTorch wrote: tests/fr_torch_prog.py), analyze and replay\n"
    "             (--spawn: replay --spawn too)\n"
    "  A miss is printed with its seed and program: --hangs 1 --seed S\n"
    "  --from I runs it alone\n"
    "exit status: 0 every program scored in full (and every output\n"
    "  checked passed), 1 a miss, 2 bad options\n";

/* ---- options ---- */

static long bs_bench_hangs_cpus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 256 ? 256 : n;
}

static bool hangs_number(const char *opt, const char *v, long lo, long hi,
                         long *out) {
  if (bs_num_long(v, lo, hi, out))
    return true;
  fprintf(stderr,
          "backstop bench: %s: expected an integer in [%ld, %ld], got '%s'\n",
          opt, lo, hi, v);
  return false;
}

/* The numbers' options and where each goes. */
static const struct {
  const char *name;
  long lo, hi;
  size_t at;
} hangs_numbers[] = {
    {"--hangs", 0, 10000000, offsetof(hangs_opts, count)},
    {"--seed", 0, LONG_MAX, offsetof(hangs_opts, seed)},
    {"--from", 0, LONG_MAX, offsetof(hangs_opts, from)},
    {"--min-ranks", 4, 512, offsetof(hangs_opts, min_ranks)},
    {"--max-ranks", 4, 512, offsetof(hangs_opts, max_ranks)},
    {"--settle-ms", 1, 60000, offsetof(hangs_opts, settle_ms)},
    {"--timeout-ms", 1, 600000, offsetof(hangs_opts, timeout_ms)},
    {"--frt-sample", 0, 10000000, offsetof(hangs_opts, frt_sample)},
    {"--keep-ranks", 4, 512, offsetof(hangs_opts, keep_ranks)},
    {"--jobs", 1, 256, offsetof(hangs_opts, jobs)},
};

static bool hangs_schedule(hangs_opts *o, const char *v) {
  bs_sched_spec spec;
  if (bs_sched_spec_parse(v, &spec) != BS_OK) {
    fprintf(stderr, "backstop bench: --schedule: %s\n", bs_err()->message);
    bs_err_clear();
    return false;
  }
  o->schedule = v;
  return true;
}

static bool hangs_value(hangs_opts *o, const char *opt, const char *v) {
  long n = 0;
  for (size_t i = 0; i < sizeof hangs_numbers / sizeof hangs_numbers[0]; i++)
    if (!strcmp(opt, hangs_numbers[i].name)) {
      if (!hangs_number(opt, v, hangs_numbers[i].lo, hangs_numbers[i].hi, &n))
        return false;
      *(long *)((char *)o + hangs_numbers[i].at) = n;
      return true;
    }
  if (!strcmp(opt, "--keep"))
    o->keep = v;
  else if (!strcmp(opt, "--score"))
    o->score = v;
  else if (!strcmp(opt, "--torchfrtrace"))
    o->frt = v;
  else if (!strcmp(opt, "--schedule"))
    return hangs_schedule(o, v);
  else {
    fprintf(stderr,
            "backstop bench: unknown option '%s' (see backstop bench "
            "--hangs 1 --help)\n",
            opt);
    return false;
  }
  return true;
}

static int hangs_parse(int argc, char **argv, hangs_opts *o) {
  *o = (hangs_opts){.seed = 1,
                    .frt = "",
                    .schedule = "random",
                    .frt_sample = 100,
                    .jobs = bs_bench_hangs_cpus(),
                    .settle_ms = 10,
                    .timeout_ms = 2000};
  /* --help anywhere, even where a value was expected (--hangs --help). */
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(hangs_usage, stdout);
      return 0;
    }
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--check") || !strcmp(argv[i], "--spawn")) {
      *(argv[i][2] == 'c' ? &o->check : &o->spawn) = true;
      continue;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "backstop bench: %s: expected a value\n", argv[i]);
      return 2;
    }
    if (!hangs_value(o, argv[i], argv[i + 1]))
      return 2;
    i++;
  }
  o->lim = (bs_corpus_limits){(int)o->min_ranks, (int)o->max_ranks};
  if (o->lim.min_ranks && o->lim.max_ranks &&
      o->lim.min_ranks > o->lim.max_ranks) {
    fprintf(stderr, "backstop bench: --min-ranks above --max-ranks\n");
    return 2;
  }
  if (!o->count && !o->score) {
    fprintf(stderr, "backstop bench: --hangs: expected a number of programs "
                    "above 0, or --score DIR\n");
    return 2;
  }
  return -1;
}

/* ---- hangs_one job ---- */

/* In a child scoring a chunk: its misses, handed to the parent, which
 * prints every chunk's in program order (NULL: printed at once). */
static bs_buf *hangs_missed;

static void hangs_miss(const char *who, const char *what, const char *why) {
  if (hangs_missed) {
    bs_buf_printf(hangs_missed, "miss: %s (%s): %s\n", who, what, why);
    return;
  }
  printf("miss: %s (%s): %s\n", who, what, why);
  fflush(stdout);
}

static bool hangs_keep_file(const char *dir, const char *name,
                            const char *text) {
  char path[4200];
  snprintf(path, sizeof path, "%.4000s/%s", dir, name);
  return bs_file_publish(path, text, strlen(text)) == BS_OK;
}

/* dot -Tsvg of the graph (a file of its own in /tmp: dir may be a folder
 * of dumps that is not ours), the trace by the rules. */
static void hangs_check_outputs(const bs_dumps_verdict *v, const char *who,
                                hangs_tally *t) {
  char path[] = "/tmp/bs_hangs_dot_XXXXXX", why[256] = "";
  char *argv[] = {"dot", "-Tsvg", "-o", "/dev/null", path, NULL};
  int fd = mkstemp(path);
  size_t len = strlen(v->dot);
  bool dot = fd >= 0 && write(fd, v->dot, len) == (ssize_t)len &&
             bs_bench_exec(argv, NULL, NULL, NULL) == 0;
  bool trace = bs_bench_trace_ok(v->trace, why, sizeof why);
  if (fd >= 0) {
    close(fd);
    unlink(path);
  }
  t->outputs++;
  if (!dot)
    hangs_miss(who, "--graph", "dot -Tsvg refused it");
  if (!trace)
    hangs_miss(who, "--trace", why);
  t->outputs_bad += !dot || !trace;
  bs_err_clear();
}

/* The rank number at q (its digits), picked when it is one of the n:
 * where the digits end, or q when there are none. */
static const char *hangs_frt_rank(const char *q, bool *pick, int n, bool *any) {
  char *end = (char *)q;
  errno = 0;
  long r = *q >= '0' && *q <= '9' ? strtol(q, &end, 10) : -1;
  if (end > q && errno == 0 && r < n)
    *any = pick[r] = true;
  return end;
}

/* The ranks of each "<key>{1, 3}" in out. */
static bool hangs_frt_sets(const char *out, const char *key, bool *pick,
                           int n) {
  bool any = false;
  size_t k = strlen(key);
  for (const char *p = out; (p = strstr(p, key)); p++)
    for (const char *q = p + k; *q && *q != '}';) {
      const char *end = hangs_frt_rank(q, pick, n, &any);
      q = end > q ? end : q + 1;
    }
  return any;
}

/* The ranks torchfrtrace names: missing from a collective, whose dumps it
 * lacks, or culprits. */
static bool hangs_frt_ranks(const char *out, bool *pick, int n) {
  bool any = hangs_frt_sets(out, "missing ranks: {", pick, n);
  any |= hangs_frt_sets(out, "missed FR dumps from ranks ({", pick, n);
  for (const char *p = out; (p = strstr(p, "Culprit rank ")); p++)
    hangs_frt_rank(p + 13, pick, n, &any);
  return any;
}

/* "it names 1,3; the roots are 2": a few of each. */
static void hangs_frt_why(const bool *want, const bool *got, int ranks,
                          char *why, size_t n) {
  bs_buf b = {0};
  const bool *set[2] = {got, want};
  for (int s = 0; s < 2; s++) {
    int shown = 0;
    bs_buf_printf(&b, "%s", s ? "; the roots are " : "it names ");
    for (int r = 0; r < ranks; r++)
      if (set[s][r] && shown++ < 8)
        bs_buf_printf(&b, "%s%d", shown > 1 ? "," : "", r);
    bs_buf_printf(&b, "%s", !shown ? "none" : shown > 8 ? ",..." : "");
  }
  snprintf(why, n, "%s", bs_buf_str(&b));
  bs_buf_free(&b);
}

/* torchfrtrace on the dumps: the ranks it blames are the truth's roots. */
static bool hangs_frt_scores(const hangs_opts *o, const char *dir,
                             const bs_json *truth, int ranks, char *why,
                             size_t n) {
  /* Its best: dumps named rank_<R> (the folder holds other files), and
   * an answer where some rank left none. */
  static const char sh[] =
      "exec \"$0\" -p rank_ --allow-incomplete-ranks \"$1\" 2>&1";
  char *argv[] = {"sh", "-c", (char *)sh, (char *)o->frt, (char *)dir, NULL};
  bs_buf out = {0};
  bool *want = calloc((size_t)ranks + 1, sizeof *want);
  bool *got = calloc((size_t)ranks + 1, sizeof *got), same = want && got;
  int rc = bs_bench_exec(argv, NULL, &out, NULL);
  const bs_json *roots = bs_json_get(truth, "roots");
  for (size_t i = 0; same && roots && i < roots->n; i++) {
    int64_t r = bs_json_get_int(&roots->items[i], "rank", -1);
    if (r >= 0 && r < ranks)
      want[r] = true;
  }
  same = same &&
         hangs_frt_ranks(bs_buf_str(&out), got, ranks) == (roots && roots->n);
  for (int r = 0; same && r < ranks; r++)
    same = want[r] == got[r];
  if (!same && (rc || !got || !want))
    snprintf(why, n, "failed (exit %d)%s", rc,
             strstr(bs_buf_str(&out), "Traceback") ? ": a Python traceback"
                                                   : "");
  else if (!same)
    hangs_frt_why(want, got, ranks, why, n);
  bs_buf_free(&out);
  free(want);
  free(got);
  return same;
}

/* analyze and replay (and replay --spawn) of the dumps in dir against
 * truth. */
static void hangs_score_dumps(const hangs_opts *o, const char *dir,
                              const char *truth, const char *who, bool kept,
                              hangs_tally *t) {
  bs_dumps d;
  bs_dumps_verdict v = {0};
  bs_replay_result res = {0};
  bs_dumps_report_opts ro = {.dot = o->check, .trace = o->check};
  char why[512];
  double t0 = bs_bench_measure_now_s();
  if (bs_dumps_load(dir, NULL, &d) != BS_OK ||
      bs_dumps_report_with(&d, &ro, &v) != BS_OK) {
    hangs_miss(who, "analyze", bs_err()->message);
    bs_err_clear();
    return;
  }
  double t1 = bs_bench_measure_now_s();
  t->t_analyze += t1 - t0;
  if (bs_corpus_score(truth, v.json, false, why, sizeof why))
    t->analyze++;
  else
    hangs_miss(who, "analyze", why);
  if (kept)
    hangs_keep_file(dir, "analyze.json", v.json);
  if (o->check)
    hangs_check_outputs(&v, who, t);
  for (int spawn = 0; spawn <= (int)o->spawn; spawn++) {
    bs_replay_opts ro2 = {.timeout_ms = (int)o->timeout_ms,
                          .settle_ms = spawn ? 0 : (int)o->settle_ms,
                          .procs = spawn,
                          .schedule = o->schedule,
                          .schedule_seed = (uint64_t)o->seed};
    if (bs_replay_run(&d, &ro2, &res) != BS_OK) {
      hangs_miss(who, spawn ? "replay --spawn" : "replay", bs_err()->message);
      bs_err_clear();
      continue;
    }
    /* Its verdict, the read-back's where reproduced, else the dumps'. */
    bool ok = bs_corpus_score(truth, res.json, res.reproduced, why, sizeof why);
    if (ok)
      *(spawn ? &t->spawn : &t->replay) += 1;
    else
      hangs_miss(who, spawn ? "replay --spawn" : "replay", why);
    *(spawn ? &t->spawn_reproduced : &t->reproduced) += res.reproduced;
    if (!res.reproduced && getenv("BS_HANGS_REPRO") && res.back_json &&
        !bs_corpus_score(truth, res.back_json, true, why, sizeof why))
      fprintf(stderr, "not reproduced: %s: %s\n", who, why);
    if (kept && !spawn && res.back_json)
      hangs_keep_file(dir, "replay.json", res.back_json);
    bs_replay_result_free(&res);
  }
  t->t_replay += bs_bench_measure_now_s() - t1;
  if (getenv("BS_HANGS_TIMES"))
    fprintf(stderr, "%s: analyze %.3f s, replay %.3f s\n", who, t1 - t0,
            bs_bench_measure_now_s() - t1);
  bs_dumps_report_verdict_free(&v);
  bs_dumps_free(&d);
}

/* ---- the corpus ---- */

static bool hangs_place(const hangs_opts *o, uint64_t i, bool kept, char *dir,
                        size_t n, char *scratch) {
  if (kept) {
    snprintf(dir, n, "%s/s%llu-p%llu", o->keep, (unsigned long long)o->seed,
             (unsigned long long)i);
    return bs_file_remove_tree(dir) == BS_OK && bs_file_mkdir_p(dir) == BS_OK;
  }
  snprintf(dir, n, "%s/p%llu", scratch, (unsigned long long)i);
  return true;
}

static void hangs_one(const hangs_opts *o, uint64_t i, char *scratch,
                      hangs_tally *t) {
  bs_corpus *c = NULL;
  char dir[4096] = "", who[160], why[512];
  bs_buf prog = {0}, truth = {0};
  double t0 = bs_bench_measure_now_s();
  snprintf(who, sizeof who, "seed %llu program %llu",
           (unsigned long long)o->seed, (unsigned long long)i);
  bool kept = false;
  if (bs_corpus_make((uint64_t)o->seed, i, &o->lim, &c) == BS_OK)
    kept = o->keep && (!o->keep_ranks || bs_corpus_ranks(c) <= o->keep_ranks);
  if (!c || bs_corpus_truth_json(c, &truth) != BS_OK ||
      !hangs_place(o, i, kept, dir, sizeof dir, scratch)) {
    hangs_miss(who, "the program", bs_err()->message);
    goto out;
  }
  double t1 = bs_bench_measure_now_s();
  t->t_make += t1 - t0;
  t->ranks_sum += bs_corpus_ranks(c);
  if (kept && (bs_corpus_prog_json(c, &prog) != BS_OK ||
               !hangs_keep_file(dir, "program.json", bs_buf_str(&prog)) ||
               !hangs_keep_file(dir, "truth.json", bs_buf_str(&truth)))) {
    hangs_miss(who, "--keep", bs_err()->message);
    goto out;
  }
  if (bs_corpus_sim_run(c, dir) != BS_OK) {
    hangs_miss(who, "the sim", bs_err()->message);
    goto out;
  }
  t->t_sim += bs_bench_measure_now_s() - t1;
  snprintf(who + strlen(who), sizeof who - strlen(who), ", %d ranks",
           bs_corpus_ranks(c));
  hangs_score_dumps(o, dir, bs_buf_str(&truth), who, kept, t);
  if (o->frt[0] && (long)(i - (uint64_t)o->from) < o->frt_sample) {
    bs_json tj = {0};
    t->frt_run++;
    if (bs_json_parse(truth.s, truth.len, &tj) == BS_OK &&
        hangs_frt_scores(o, dir, &tj, bs_corpus_ranks(c), why, sizeof why))
      t->frt++;
    else if (getenv("BS_HANGS_FRT_MISSES"))
      hangs_miss(who, "torchfrtrace", why);
    bs_json_free(&tj);
  }
out:
  t->programs++;
  bs_err_clear();
  if (!kept && dir[0] && bs_file_remove_tree(dir) != BS_OK)
    bs_err_clear();
  bs_buf_free(&prog);
  bs_buf_free(&truth);
  bs_corpus_free(c);
}

static void hangs_summary(const hangs_opts *o, const hangs_tally *t,
                          double seconds) {
  long n = t->programs ? t->programs : 1;
  if (o->score)
    printf("hangs: %ld jobs of %s (each folder's truth.json)\n", t->programs,
           o->score);
  else
    printf("hangs: %ld programs (seed %llu, from %llu), %.1f ranks on "
           "average\n",
           t->programs, (unsigned long long)o->seed,
           (unsigned long long)o->from, (double)t->ranks_sum / (double)n);
  printf("  analyze: %ld/%ld (%.1f%%)\n", t->analyze, t->programs,
         100.0 * (double)t->analyze / (double)n);
  printf("  replay:  %ld/%ld (%.1f%%); its run reproduced the dumps' roots on "
         "%ld (%.1f%%), else it names the dumps'\n",
         t->replay, t->programs, 100.0 * (double)t->replay / (double)n,
         t->reproduced, 100.0 * (double)t->reproduced / (double)n);
  if (o->spawn)
    printf("  replay --spawn: %ld/%ld; reproduced on %ld\n", t->spawn,
           t->programs, t->spawn_reproduced);
  if (t->frt_run)
    printf(
        "  torchfrtrace: %ld/%ld (%.1f%%): the ranks it names are the roots\n",
        t->frt, t->frt_run, 100.0 * (double)t->frt / (double)t->frt_run);
  if (o->check)
    printf("  outputs: %ld --graph through dot -Tsvg and --trace by the trace "
           "rules, %ld refused\n",
           t->outputs, t->outputs_bad);
  printf("  time: %.1f s, %.1f programs/s (drawing %.1f s, the sim %.1f s, "
         "analyze %.1f s, replay %.1f s)\n",
         seconds, (double)t->programs / (seconds > 0 ? seconds : 1), t->t_make,
         t->t_sim, t->t_analyze, t->t_replay);
}

static bool hangs_all_scored(const hangs_opts *o, const hangs_tally *t) {
  return t->analyze == t->programs && t->replay == t->programs &&
         (!o->spawn || t->spawn == t->programs) && !t->outputs_bad;
}

/* --score DIR: each sub-folder with a truth.json, in name order. */
static int hangs_score_folders(const hangs_opts *o, hangs_tally *t) {
  struct dirent **names = NULL;
  int n = scandir(o->score, &names, NULL, alphasort), rc = -1;
  if (n < 0) {
    fprintf(stderr, "backstop bench: --score %s: %s\n", o->score,
            strerror(errno));
    return 2;
  }
  for (int i = 0; i < n; i++) {
    char dir[4096], *truth = NULL;
    size_t len;
    snprintf(dir, sizeof dir, "%s/%s/truth.json", o->score, names[i]->d_name);
    char why[256] = "";
    bool read =
        names[i]->d_name[0] != '.' && bs_file_read(dir, &truth, &len) == BS_OK;
    if (read && !bs_corpus_truth_check(truth, why, sizeof why))
      fprintf(stderr, "backstop bench: %s: not a truth: %s\n", dir, why);
    else if (read) {
      dir[strlen(dir) - strlen("/truth.json")] = '\0';
      hangs_score_dumps(o, dir, truth, dir, false, t);
      t->programs++;
    }
    bs_err_clear();
    free(truth);
    free(names[i]);
    rc = why[0] ? 2 : rc;
  }
  free(names);
  return rc;
}

/* ---- the programs in parallel ---- */

/* Programs a child scores: the sim's ranks are threads, and bs_fork forks
 * only from a parent without any, so the programs run in children. */
enum { HANGS_CHUNK = 20 };

typedef struct hangs_jobs {
  const hangs_opts *o;
  char *scratch;
  long done;
} hangs_jobs;

static long hangs_chunk_len(const hangs_opts *o, size_t job) {
  long first = (long)job * HANGS_CHUNK, left = o->count - first;
  return left < HANGS_CHUNK ? left : HANGS_CHUNK;
}

/* The child: its chunk's tally, then its misses' lines. */
static int hangs_child(void *arg, size_t job, int fd) {
  const hangs_jobs *j = arg;
  hangs_tally t = {0};
  bs_buf misses = {0};
  hangs_missed = &misses;
  for (long k = 0; k < hangs_chunk_len(j->o, job); k++)
    hangs_one(j->o, (uint64_t)(j->o->from + (long)job * HANGS_CHUNK + k),
              j->scratch, &t);
  int ok = bs_fork_write_all(fd, &t, sizeof t) &&
           bs_fork_write_all(fd, misses.s, misses.len);
  bs_buf_free(&misses);
  return ok ? 0 : 1;
}

static void hangs_progress(void *arg, size_t job, const bs_job_out *out) {
  hangs_jobs *j = arg;
  long before = j->done / 100;
  if (!out)
    return;
  j->done += hangs_chunk_len(j->o, job);
  if (j->done / 100 > before || j->done == j->o->count)
    fprintf(stderr, "backstop bench: --hangs: %ld of %ld programs\n", j->done,
            j->o->count);
}

static void hangs_add(hangs_tally *a, const hangs_tally *b) {
  a->programs += b->programs;
  a->analyze += b->analyze;
  a->replay += b->replay;
  a->reproduced += b->reproduced;
  a->spawn += b->spawn;
  a->spawn_reproduced += b->spawn_reproduced;
  a->frt += b->frt;
  a->frt_run += b->frt_run;
  a->outputs += b->outputs;
  a->outputs_bad += b->outputs_bad;
  a->ranks_sum += b->ranks_sum;
  a->t_make += b->t_make;
  a->t_sim += b->t_sim;
  a->t_analyze += b->t_analyze;
  a->t_replay += b->t_replay;
}

/* A chunk's result into the tally; a child that ended otherwise misses
 * every program of its chunk. */
static void hangs_take(const hangs_opts *o, size_t job, const bs_job_out *out,
                       hangs_tally *t) {
  hangs_tally c;
  if (out->end == BS_JOB_EXITED && out->code == 0 && out->len >= sizeof c) {
    memcpy(&c, out->payload, sizeof c);
    hangs_add(t, &c);
    fputs(out->payload + sizeof c, stdout);
    return;
  }
  long first = o->from + (long)job * HANGS_CHUNK, n = hangs_chunk_len(o, job);
  printf("miss: seed %ld programs %ld-%ld (their child): %s %d\n", o->seed,
         first, first + n - 1,
         out->end == BS_JOB_SIGNALED ? "ended by signal" : "ended, status",
         out->code);
  t->programs += n;
}

static bool hangs_parallel(const hangs_opts *o, char *scratch, hangs_tally *t) {
  hangs_jobs j = {.o = o, .scratch = scratch};
  size_t njobs = (size_t)((o->count + HANGS_CHUNK - 1) / HANGS_CHUNK);
  bs_job_out *out = calloc(njobs, sizeof *out);
  /* A program takes seconds at most; a chunk past half an hour hangs. */
  bs_fork f = {.njobs = njobs,
               .parallel = (int)o->jobs,
               .deadline_s = 1800,
               .child = hangs_child,
               .event = hangs_progress,
               .arg = &j};
  if (!out || bs_fork_run(&f, out) != BS_OK) {
    free(out);
    if (!bs_err()->message[0])
      bs_err_fail_at(BS_HERE, BS_ERR_NOMEM, NULL,
                     "--hangs: the children's results");
    return false;
  }
  for (size_t k = 0; k < njobs; k++) {
    hangs_take(o, k, &out[k], t);
    free(out[k].payload);
  }
  fflush(stdout);
  free(out);
  return true;
}

int bs_bench_hangs_main(int argc, char **argv) {
  hangs_opts o;
  hangs_tally t = {0};
  char scratch[64] = "";
  int rc = hangs_parse(argc, argv, &o);
  if (rc >= 0)
    return rc;
  double t0 = bs_bench_measure_now_s();
  if (o.score && (rc = hangs_score_folders(&o, &t)) >= 0)
    return rc;
  if ((!o.keep || o.keep_ranks) && o.count &&
      bs_file_scratch("bs_bench_hangs", scratch, sizeof scratch) != BS_OK) {
    fprintf(stderr, "backstop bench: %s\n", bs_err()->message);
    return 1;
  }
  if (o.count && !hangs_parallel(&o, scratch, &t)) {
    fprintf(stderr, "backstop bench: %s\n", bs_err()->message);
    return 1;
  }
  if (scratch[0] && bs_file_remove_tree(scratch) != BS_OK)
    bs_err_clear();
  hangs_summary(&o, &t, bs_bench_measure_now_s() - t0);
  return hangs_all_scored(&o, &t) ? 0 : 1;
}
