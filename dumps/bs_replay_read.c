/* The replayed ranks' flight recorders read back as `analyze` reads a
 * job's dumps: what the replay says after the world's own report. */
#include "bs_replay_read.h"

#include <string.h>

#include "bs_dumps_report.h"

/* The culprit line of an analysis ("  culprit: rank 3 (missing from #4)"),
 * NULL when it names none. */
static const char *culprit_line(const char *text, int *len) {
  const char *at = strstr(text, "\n  culprit: ");
  if (!at)
    return NULL;
  *len = (int)strcspn(at + 1, "\n");
  return at + 1;
}

/* The read-back's text from its verdict (got: how the reading went),
 * which goes to back (emptied when it did not read). */
static bs_status read_back_text(bs_status got, bs_dumps_verdict *v,
                                bool culprit_first, bs_buf *text,
                                bs_dumps_verdict *back) {
  int len = 0;
  const char *line = NULL;
  if (got == BS_OK) {
    if (culprit_first && (line = culprit_line(v->text, &len)))
      bs_buf_printf(text, "%.*s\n", len, line);
    bs_buf_printf(text,
                  "the replayed ranks' flight recorders, as backstop "
                  "analyze reads them:\n%s",
                  v->text);
  } else
    bs_buf_printf(text, "  their flight recorders do not read: %s\n",
                  bs_err()->message);
  bs_err_clear();
  if (got == BS_OK)
    *back = *v;
  else
    bs_dumps_report_verdict_free(v);
  return text->oom ? bs_err_fail(BS_ERR_NOMEM, NULL, "replay: report") : BS_OK;
}

bs_status bs_replay_read_back(const char *const *flights, int n,
                              bool culprit_first, bs_buf *text,
                              bs_dumps_verdict *back) {
  bs_dumps_verdict v = {0};
  bs_status got = bs_dumps_report_flights(flights, n, &v);
  return read_back_text(got, &v, culprit_first, text, back);
}

static char *world_flight(void *w, int rank) {
  return bs_world_flight_json(w, rank);
}

/* Every rank's flight recorder of w, read back as analyze reads them
 * (written and read on a few threads at once: thousands of ranks). */
bs_status bs_replay_read_world(bs_world *w, int n, bs_buf *text,
                               bs_dumps_verdict *back) {
  bs_dumps_verdict v = {0};
  bs_status got = bs_dumps_report_made(world_flight, w, n, &v);
  if (got == BS_ERR_NOMEM)
    return got;
  return read_back_text(got, &v, false, text, back);
}
