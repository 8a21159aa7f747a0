/* Numbers read from the command line, the environment and the text of
 * dumps: a whole string or nothing. An integer is a plain decimal, digits
 * only: what strtol would take besides ("+4", " 4", "010" read as octal)
 * is refused. The callers word their own usage errors. */
#ifndef BS_NUM_H
#define BS_NUM_H

#include <stdbool.h>
#include <stddef.h>

/* Digits only, no sign, no space, no leading zero ("0" itself is one). */
bool bs_num_plain(const char *s);
/* A plain decimal in [lo, hi]; *out untouched when it is not one. */
bool bs_num_long(const char *s, long lo, long hi, long *out);
bool bs_num_int(const char *s, int lo, int hi, int *out);
bool bs_num_ull(const char *s, unsigned long long lo, unsigned long long hi,
                unsigned long long *out);
/* Hex digits after 0x or 0X, and nothing else (no sign, no space, no
 * second 0x), up to ULLONG_MAX; *out untouched when it is not one. */
bool bs_num_hex(const char *s, unsigned long long *out);
/* bs_num_long of the n bytes at s (a name's digits, a line of a header). */
bool bs_num_longn(const char *s, size_t n, long lo, long hi, long *out);
/* A finite number in (0, max] (strtod's forms); *out untouched else. */
bool bs_num_positive(const char *s, double max, double *out);

#endif
