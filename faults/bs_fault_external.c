/* Faults armed from outside: libfiu's fiu-run hands its preload library the
 * commands in FIU_ENABLE ("enable name=P,failinfo=I", one per line); the
 * run reports each one that names a point of ours as armed, fired or not.
 * The preload library empties the variable once it has applied it, so the
 * commands are read from the environment the process started with
 * (/proc/self/environ, which a forked child shares). */
#include "bs_fault_control.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "<point>/r<digits>" -> "<point>", else name unchanged. */
static void unqualified(const char *name, char *out, size_t n) {
  snprintf(out, n, "%s", name);
  char *slash = strrchr(out, '/');
  if (!slash || slash[1] != 'r' || !slash[2])
    return;
  for (const char *p = slash + 2; *p; p++)
    if (*p < '0' || *p > '9')
      return;
  *slash = '\0';
}

bool bs_fault_external_covers(const char *name, bs_fault_point_id id,
                              int rank) {
  const char *point = bs_fault_catalogue_get(id)->name;
  char qualified[BS_FAULT_NAME_MAX + 16];
  snprintf(qualified, sizeof qualified, "%s/r%d", point, rank);
  return bs_fault_spec_matches(name, point) ||
         (rank >= 0 && bs_fault_spec_matches(name, qualified));
}

/* Whether a libfiu name arms one of the catalogue's points. */
static bool ours(const char *name) {
  char base[BS_FAULT_NAME_MAX + 16];
  unqualified(name, base, sizeof base);
  if (bs_fault_catalogue_find(base))
    return true;
  for (int i = 0; i < BS_FP_COUNT; i++)
    if (bs_fault_external_covers(name, (bs_fault_point_id)i, 0))
      return true;
  return false;
}

/* One FIU_ENABLE line: "enable[_random|_external...] name=N[,k=v...]". */
static bool parse_line(const char *line, size_t len, bs_fault_external *out) {
  size_t lead = strspn(line, " \t");
  lead = lead < len ? lead : len;
  snprintf(out->command, sizeof out->command, "%.*s", (int)(len - lead),
           line + lead);
  if (strncmp(out->command, "enable", 6) != 0)
    return false;
  const char *at = strstr(out->command, "name=");
  if (!at)
    return false;
  at += 5;
  snprintf(out->name, sizeof out->name, "%.*s", (int)strcspn(at, ", \t"), at);
  return out->name[0] && ours(out->name);
}

/* FIU_ENABLE as the process started with it (malloc'd), NULL when none. */
static char *initial_commands(void) {
  static const char key[] = "FIU_ENABLE=";
  const char *now = getenv("FIU_ENABLE");
  if (now && *now)
    return strdup(now);
  FILE *f = fopen("/proc/self/environ", "r");
  char *found = NULL, *entry = NULL;
  size_t cap = 0;
  while (f && !found && getdelim(&entry, &cap, '\0', f) > 0)
    if (strncmp(entry, key, sizeof key - 1) == 0)
      found = strdup(entry + sizeof key - 1);
  free(entry);
  if (f)
    fclose(f);
  return found;
}

size_t bs_fault_external_list(bs_fault_external *out, size_t max) {
  char *env = initial_commands();
  size_t n = 0;
  for (const char *p = env; p && *p;) {
    size_t len = strcspn(p, "\n");
    bs_fault_external e;
    if (len && parse_line(p, len, &e)) {
      if (n < max)
        out[n] = e;
      n++;
    }
    p += len + (p[len] == '\n');
  }
  free(env);
  return n;
}
