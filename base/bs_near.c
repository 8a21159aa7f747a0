#include "bs_near.h"

#include <stdio.h>
#include <string.h>

/* Longer words are not worth a suggestion. */
#define NEAR_LEN_MAX 64

/* Edits (insert, delete, replace, swap two neighbours) from a to b. */
static size_t distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  size_t d[NEAR_LEN_MAX + 1][NEAR_LEN_MAX + 1];
  if (la > NEAR_LEN_MAX || lb > NEAR_LEN_MAX)
    return (size_t)-1;
  for (size_t i = 0; i <= la; i++)
    d[i][0] = i;
  for (size_t j = 0; j <= lb; j++)
    d[0][j] = j;
  for (size_t i = 1; i <= la; i++)
    for (size_t j = 1; j <= lb; j++) {
      size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      best = d[i - 1][j] + 1 < best ? d[i - 1][j] + 1 : best;
      best = d[i][j - 1] + 1 < best ? d[i][j - 1] + 1 : best;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[la][lb];
}

const char *bs_near(const char *word, const char *const *names, size_t n) {
  size_t best = 2 + strlen(word) / 4; /* misspellings, not any short name */
  const char *near = NULL;
  for (size_t i = 0; word[0] && i < n; i++) {
    if (!names[i])
      continue;
    size_t d = distance(word, names[i]);
    if (d < best) {
      best = d;
      near = names[i];
    }
  }
  return near;
}

const char *bs_near_hint(const char *word, const char *const *names, size_t n) {
  static _Thread_local char hint[NEAR_LEN_MAX + 32];
  const char *near = bs_near(word, names, n);
  hint[0] = '\0';
  if (near && strlen(near) <= NEAR_LEN_MAX)
    snprintf(hint, sizeof hint, " (did you mean '%s'?)", near);
  return hint;
}
