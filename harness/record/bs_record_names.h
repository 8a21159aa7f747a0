/* The tensor names of a run record's digests, each kept once for the
 * process: a 16,384-rank world's digests named every tensor again on each
 * rank at each phase (96 bytes a name, 0.4 GiB of steady-maincast's
 * world). Interned for the process's life: the names of the models it
 * ran, a few thousand at most. */
#ifndef BS_RECORD_NAMES_H
#define BS_RECORD_NAMES_H

/* The process's copy of name (NULL when out of memory); from any thread. */
const char *bs_record_names_intern(const char *name);

#endif
