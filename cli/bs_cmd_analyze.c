/* backstop analyze DIR: the hang report of a job's Flight Recorder dumps
 * (PyTorch's pickles, their JSON, or Backstop's own); its verdict as JSON,
 * its wait-for graph as DOT and the dumps as a trace, each written whole. */
#include <stdio.h>
#include <string.h>

#include "bs_cmd.h"
#include "dumps/bs_dumps.h"
#include "dumps/bs_dumps_report.h"

typedef struct analyze_args {
  const char *dir, *pg, *json, *graph, *trace;
} analyze_args;

/* "--json FILE" and the others; false (after the one line) on a bad one. */
static bool parse(int argc, char **argv, analyze_args *a, int *rc) {
  static const char *const names[] = {"--pg", "--json", "--graph", "--trace"};
  for (int i = 1; i < argc; i++) {
    const char **slot[] = {&a->pg, &a->json, &a->graph, &a->trace};
    size_t k = 0;
    while (k < 4 && strcmp(argv[i], names[k]) != 0)
      k++;
    if (k < 4 && i + 1 < argc && argv[i + 1][0])
      *slot[k] = argv[++i];
    else if (argv[i][0] != '-' && !a->dir)
      a->dir = argv[i];
    else {
      *rc = bs_cmd_bad_arg("analyze", argv[i]);
      return false;
    }
  }
  if (!a->dir) {
    fprintf(stderr, "backstop analyze: expected the folder of the dumps "
                    "(see backstop help analyze)\n");
    *rc = 2;
  }
  return a->dir != NULL;
}

static void skipped(const bs_dumps *d) {
  if (d->skipped) /* one line, whatever their number */
    fprintf(stderr, "backstop analyze: skipped %zu file%s that %s: %s\n",
            d->nskipped, d->nskipped == 1 ? "" : "s",
            d->nskipped == 1 ? "is not a Flight Recorder dump"
                             : "are not Flight Recorder dumps",
            d->skipped);
  if (d->unread)
    fprintf(stderr,
            "backstop analyze: not read: the dumps in %s (a folder's "
            "sub-folders are read only where it holds no dump of its own: "
            "move them beside the others, or analyze a folder of folders)\n",
            d->unread);
}

/* The files asked for; 1 (named on stderr) when one could not be written. */
static int publish(const analyze_args *a, const bs_dumps_verdict *v) {
  const char *what[] = {"--json", "--graph", "--trace"};
  const char *path[] = {a->json, a->graph, a->trace};
  const char *text[] = {v->json, v->dot, v->trace};
  int rc = 0;
  for (int k = 0; k < 3; k++)
    if (path[k] && bs_dumps_report_publish(what[k], path[k], text[k]) != BS_OK)
      rc = bs_cmd_usage_error("analyze") ? 1 : 1;
  return rc;
}

int bs_cmd_analyze(int argc, char **argv) {
  analyze_args a = {0};
  bs_dumps d;
  bs_dumps_verdict v;
  int rc = 0;
  if (!parse(argc, argv, &a, &rc))
    return rc;
  if (bs_dumps_load(a.dir, a.pg, &d) != BS_OK)
    return bs_cmd_usage_error("analyze");
  skipped(&d);
  bs_dumps_report_opts o = {.dot = a.graph != NULL, .trace = a.trace != NULL};
  if (bs_dumps_report_with(&d, &o, &v) != BS_OK) {
    bs_dumps_free(&d);
    return bs_cmd_usage_error("analyze");
  }
  fputs(v.text, stdout);
  rc = v.finding == BS_DUMPS_CLEAN ? 0 : 1;
  rc = publish(&a, &v) ? 1 : rc;
  bs_dumps_report_verdict_free(&v);
  bs_dumps_free(&d);
  return rc;
}
