#include "bs_progress.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void bs_progress_init(bs_progress *p, FILE *out, const char *label) {
  const char *env = getenv("BS_PROGRESS_S");
  char *end = NULL;
  double s = env ? strtod(env, &end) : -1;
  *p = (bs_progress){
      .out = out,
      .tty = out && isatty(fileno(out)),
      .interval_s = env && end != env && s >= 0 ? s : BS_PROGRESS_INTERVAL_S,
      .label = label,
      .t0 = now_s()};
  p->last = p->t0;
}

void bs_progress_add(bs_progress *p, bool failed, bool vacuous) {
  p->done++;
  p->failed += failed;
  p->vacuous += vacuous;
}

/* "eta 40 s", "12 s left", or "" when nothing says yet. */
static void remaining(const bs_progress *p, double t, char *out, size_t n) {
  double spent = t - p->t0;
  out[0] = '\0';
  if (p->budget_s > 0)
    snprintf(out, n, ", %.0f s left",
             spent < p->budget_s ? p->budget_s - spent : 0);
  else if (p->total && p->done && p->done <= p->total)
    snprintf(out, n, ", eta %.0f s",
             spent / (double)p->done * (double)(p->total - p->done));
}

void bs_progress_show(bs_progress *p, const char *what) {
  double t = now_s();
  char total[32] = "", left[48], counts[64];
  if (what)
    snprintf(p->what, sizeof p->what, "%s", what);
  if (!p->out || (!p->tty && t - p->last < p->interval_s))
    return;
  p->last = t;
  if (p->total)
    snprintf(total, sizeof total, "/%zu", p->total);
  remaining(p, t, left, sizeof left);
  snprintf(counts, sizeof counts, "%zu failed, %zu vacuous", p->failed,
           p->vacuous);
  fprintf(p->out, "%s%s: %zu%s runs%s, %s%s", p->tty ? "\r\033[K" : "",
          p->label ? p->label : "backstop", p->done, total, left,
          p->what[0] ? p->what : counts, p->tty ? "" : "\n");
  p->drawn = p->tty;
  fflush(p->out);
}

void bs_progress_end(bs_progress *p) {
  if (p->out && p->drawn) {
    fprintf(p->out, "\r\033[K");
    fflush(p->out);
  }
  p->drawn = false;
}
