/* The model-spec parser (format in bs_model.h) and tensor classification.
 * Presets are texts in the same format (bs_model_preset.c), so every model
 * goes through this one parser. */
#include "model/bs_model.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_vec.h"
#include "model/bs_model_parse.h"

/* Far above any model this framework runs, far below size_t overflow. */
#define NUMEL_MAX ((int64_t)1 << 40)
#define DIM_MAX ((int64_t)1 << 31)
#define MAX_TOKENS 12
#define FILE_MAX ((size_t)64 << 20)

typedef struct parser {
  const char *file;
  int line;
  double scale;
  bs_model_spec *m;
  size_t cap;
  bool have_model;
} parser;

/* Every parse error reads "FILE:LINE: expected WHAT, got 'TOKEN'". */
#define PFAIL(p, tensor, what, got)                                            \
  BS_FAIL(BS_ERR_INVALID, (tensor), "%s:%d: expected %s, got '%.48s'",         \
          (p)->file, (p)->line, (what), (got))

static const struct {
  const char *name;
  unsigned bit;
} flag_names[] = {
    {"frozen", BS_TF_FROZEN}, {"expert", BS_TF_EXPERT},
    {"buffer", BS_TF_BUFFER}, {"expert_bias", BS_TF_EXPERT_BIAS},
    {"fp32", BS_TF_FP32},     {"lora", BS_TF_LORA},
};
#define NFLAGS (sizeof flag_names / sizeof flag_names[0])

static bool valid_name(const char *s, size_t max) {
  size_t n = strlen(s);
  if (n == 0 || n >= max)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]) && !strchr("_.-/", s[i]))
      return false;
  return true;
}

/* One dim: decimal digits only, 1..DIM_MAX. */
static bool parse_dim(const char *s, size_t len, int64_t *out) {
  int64_t v = 0;
  if (len == 0)
    return false;
  for (size_t i = 0; i < len; i++) {
    if (!isdigit((unsigned char)s[i]))
      return false;
    v = v * 10 + (s[i] - '0');
    if (v > DIM_MAX)
      return false;
  }
  *out = v;
  return v > 0;
}

static bs_status numel_of(const parser *p, bs_tensor_spec *t, const char *tok) {
  bs_status st = BS_OK;
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) {
    if (t->shape[i] > NUMEL_MAX / n)
      PFAIL(p, t->name, "at most 2^40 elements", tok);
    n *= t->shape[i];
  }
  t->numel = (size_t)n;
out:
  return st;
}

static bs_status parse_shape(const parser *p, bs_tensor_spec *t,
                             const char *tok) {
  static const char what[] = "a shape of 1 to 4 positive dims joined by 'x'";
  bs_status st = BS_OK;
  const char *s = tok;
  t->ndim = 0;
  for (;;) {
    const char *x = strchr(s, 'x');
    size_t len = x ? (size_t)(x - s) : strlen(s);
    if (t->ndim == BS_MAX_DIMS || !parse_dim(s, len, &t->shape[t->ndim]))
      PFAIL(p, t->name, what, tok);
    t->ndim++;
    if (!x)
      break;
    s = x + 1;
  }
  BS_CHECK(numel_of(p, t, tok));
out:
  return st;
}

static bs_status parse_flag(const parser *p, bs_tensor_spec *t,
                            const char *tok) {
  bs_status st = BS_OK;
  for (size_t i = 0; i < NFLAGS; i++) {
    if (strcmp(tok, flag_names[i].name) != 0)
      continue;
    if (t->flags & flag_names[i].bit)
      PFAIL(p, t->name, "each flag at most once", tok);
    t->flags |= flag_names[i].bit;
    goto out;
  }
  PFAIL(p, t->name, "a flag (frozen, expert, buffer, expert_bias, fp32, lora)",
        tok);
out:
  return st;
}

static bool has(const bs_tensor_spec *t, unsigned bits) {
  return (t->flags & bits) == bits;
}

/* Combinations that describe no real tensor. An fp32 param is flagged fp32
 * implicitly so that dtype and flag can never disagree downstream. */
static bs_status check_flags(const parser *p, bs_tensor_spec *t,
                             const char *dtype_tok) {
  bs_status st = BS_OK;
  bool integer = t->dtype == BS_I32 || t->dtype == BS_I64;
  if (has(t, BS_TF_EXPERT_BIAS) && !has(t, BS_TF_BUFFER))
    PFAIL(p, t->name, "'buffer' with 'expert_bias'", "expert_bias");
  if (has(t, BS_TF_BUFFER | BS_TF_EXPERT))
    PFAIL(p, t->name, "no 'expert' on a buffer", "expert");
  if (has(t, BS_TF_BUFFER | BS_TF_FROZEN))
    PFAIL(p, t->name, "no 'frozen' on a buffer (it has no gradient)", "frozen");
  if (has(t, BS_TF_BUFFER | BS_TF_LORA))
    PFAIL(p, t->name, "no 'lora' on a buffer", "lora");
  if (has(t, BS_TF_BUFFER | BS_TF_FP32))
    PFAIL(p, t->name, "no 'fp32' flag on a buffer (it is for params)", "fp32");
  if (has(t, BS_TF_FP32) && t->dtype != BS_F32)
    PFAIL(p, t->name, "dtype fp32 with flag 'fp32'", dtype_tok);
  if (has(t, BS_TF_LORA | BS_TF_FROZEN))
    PFAIL(p, t->name, "no 'frozen' on a lora adapter (adapters train)",
          "frozen");
  if (has(t, BS_TF_LORA) && t->dtype != BS_BF16)
    PFAIL(p, t->name, "dtype bf16 for a lora adapter", dtype_tok);
  if (bs_tensor_is_param(t) && integer && !has(t, BS_TF_FROZEN))
    PFAIL(p, t->name, "flag 'frozen' on an integer param (it has no gradient)",
          dtype_tok);
  if (bs_tensor_is_param(t) && t->dtype == BS_F32)
    t->flags |= BS_TF_FP32;
out:
  return st;
}

static bs_status apply_scale(const parser *p, bs_tensor_spec *t) {
  bs_status st = BS_OK;
  double d0 = round((double)t->shape[0] * p->scale);
  char tok[32];
  snprintf(tok, sizeof tok, "scale %g", p->scale);
  if (!(d0 <= (double)NUMEL_MAX))
    PFAIL(p, t->name, "at most 2^40 elements", tok);
  t->shape[0] = d0 < 1 ? 1 : (int64_t)d0;
  BS_CHECK(numel_of(p, t, tok));
out:
  return st;
}

static bs_status push_tensor(parser *p, bs_tensor_spec **out) {
  bs_status st = BS_OK;
  bs_model_spec *m = p->m;
  BS_CHECK(
      bs_vec_reserve(&m->t, &p->cap, m->n + 1, sizeof *m->t, "model spec"));
  *out = memset(&m->t[m->n], 0, sizeof m->t[0]);
out:
  return st;
}

static bool duplicate(const bs_model_spec *m, const char *name) {
  for (size_t i = 0; i < m->n; i++)
    if (strcmp(m->t[i].name, name) == 0)
      return true;
  return false;
}

/* NAME DTYPE SHAPE [FLAG...] */
static bs_status parse_tensor(parser *p, char **tok, int ntok) {
  bs_status st = BS_OK;
  bs_tensor_spec *t = NULL;
  if (!p->have_model)
    PFAIL(p, NULL, "'model NAME' before the first tensor", tok[0]);
  if (!valid_name(tok[0], BS_NAME_MAX))
    PFAIL(p, NULL, "a tensor name of letters, digits, '_.-/' (< 96 chars)",
          tok[0]);
  if (duplicate(p->m, tok[0]))
    PFAIL(p, tok[0], "a tensor name not used before", tok[0]);
  BS_CHECK(push_tensor(p, &t));
  snprintf(t->name, sizeof t->name, "%s", tok[0]);
  if (ntok < 2)
    PFAIL(p, t->name, "a dtype after the name", "end of line");
  int dt = bs_dtype_parse(tok[1]);
  if (dt != BS_BF16 && dt != BS_F32 && dt != BS_I32 && dt != BS_I64)
    PFAIL(p, t->name, "a dtype (bf16, fp32, int32, int64)", tok[1]);
  t->dtype = (bs_dtype)dt;
  if (ntok < 3)
    PFAIL(p, t->name, "a shape after the dtype", "end of line");
  BS_CHECK(parse_shape(p, t, tok[2]));
  for (int i = 3; i < ntok; i++)
    BS_CHECK(parse_flag(p, t, tok[i]));
  BS_CHECK(check_flags(p, t, tok[1]));
  BS_CHECK(apply_scale(p, t));
  p->m->n++;
out:
  return st;
}

static bs_status parse_model_line(parser *p, char **tok, int ntok) {
  bs_status st = BS_OK;
  if (p->have_model)
    PFAIL(p, NULL, "one 'model' line", "model");
  if (ntok < 2)
    PFAIL(p, NULL, "a model name after 'model'", "end of line");
  if (ntok > 2)
    PFAIL(p, NULL, "end of line after the model name", tok[2]);
  if (!valid_name(tok[1], sizeof p->m->name))
    PFAIL(p, NULL, "a model name of letters, digits, '_.-/' (< 64 chars)",
          tok[1]);
  snprintf(p->m->name, sizeof p->m->name, "%s", tok[1]);
  p->have_model = true;
out:
  return st;
}

/* One line, modified in place (comment cut, tokens split). */
static bs_status parse_line(parser *p, char *line) {
  bs_status st = BS_OK;
  char *tok[MAX_TOKENS], *save = NULL;
  int ntok = 0;
  char *hash = strchr(line, '#');
  if (hash)
    *hash = '\0';
  for (char *s = strtok_r(line, " \t\r\v\f", &save); s;
       s = strtok_r(NULL, " \t\r\v\f", &save)) {
    if (ntok == MAX_TOKENS)
      PFAIL(p, NULL, "end of line (too many fields)", s);
    tok[ntok++] = s;
  }
  if (ntok == 0)
    goto out;
  if (strcmp(tok[0], "model") == 0)
    BS_CHECK(parse_model_line(p, tok, ntok));
  else
    BS_CHECK(parse_tensor(p, tok, ntok));
out:
  return st;
}

bs_status bs_model_parse(const char *text, const char *filename, double scale,
                         bs_model_spec *out) {
  bs_status st = BS_OK;
  bs_model_spec m = {0};
  parser p = {.file = filename ? filename : "<model>", .scale = scale, .m = &m};
  char *copy = NULL;
  if (!out || !text)
    BS_FAIL(BS_ERR_INVALID, NULL, "bs_model_parse: NULL argument");
  if (!(scale > 0) || !isfinite(scale))
    BS_FAIL(BS_ERR_INVALID, NULL, "%s: expected a finite scale > 0, got '%g'",
            p.file, scale);
  if (!(copy = strdup(text)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "model spec: out of memory");
  for (char *line = copy, *nl; line; line = nl ? nl + 1 : NULL) {
    if ((nl = strchr(line, '\n')))
      *nl = '\0';
    p.line++;
    BS_CHECK(parse_line(&p, line));
  }
  if (!p.have_model)
    PFAIL(&p, NULL, "'model NAME'", "end of file");
  if (m.n == 0)
    PFAIL(&p, NULL, "at least one tensor", "end of file");
out:
  free(copy);
  if (st == BS_OK)
    *out = m;
  else
    bs_model_free(&m);
  return st;
}

static bs_status read_file(const char *path, char **text) {
  bs_status st = BS_OK;
  size_t len = 0, cap = 4096, r = 1;
  char *buf = malloc(cap);
  FILE *f = fopen(path, "r");
  if (!f)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "expected a preset or a readable model file, got '%s': %s", path,
            strerrordesc_np(errno));
  while (buf && r > 0) {
    if (len + 1 == cap &&
        (cap >= FILE_MAX || !bs_vec_grow(&buf, &cap, cap + 1, 1)))
      BS_FAIL(BS_ERR_INVALID, NULL, "model file '%s': larger than %zu MiB",
              path, FILE_MAX >> 20);
    r = fread(buf + len, 1, cap - 1 - len, f);
    len += r;
  }
  if (!buf)
    BS_FAIL(BS_ERR_NOMEM, NULL, "model file '%s': out of memory", path);
  if (ferror(f))
    BS_FAIL(BS_ERR_INVALID, NULL, "model file '%s': read error: %s", path,
            strerrordesc_np(errno));
  /* The parser reads a C string: a NUL would silently end the file. */
  if (memchr(buf, '\0', len))
    BS_FAIL(BS_ERR_INVALID, NULL,
            "model file '%s': a NUL byte at offset %zu (not a text file)", path,
            (size_t)((char *)memchr(buf, '\0', len) - buf));
  buf[len] = '\0';
  *text = buf;
  buf = NULL;
out:
  if (f)
    fclose(f);
  free(buf);
  return st;
}

bs_status bs_model_preset(const char *name, double scale, bs_model_spec *out) {
  bs_status st = BS_OK;
  char file[32];
  const char *text = bs_model_preset_text(name);
  if (!text)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "expected a preset (tiny, dense, moe, frozen, lora), got '%.48s'",
            name ? name : "(null)");
  snprintf(file, sizeof file, "preset:%s", name);
  BS_CHECK(bs_model_parse(text, file, scale, out));
out:
  return st;
}

bs_status bs_model_load(const char *preset_or_file, double scale,
                        bs_model_spec *out) {
  bs_status st = BS_OK;
  char *text = NULL;
  if (!preset_or_file)
    BS_FAIL(BS_ERR_INVALID, NULL, "bs_model_load: NULL model name");
  if (bs_model_preset_text(preset_or_file)) {
    BS_CHECK(bs_model_preset(preset_or_file, scale, out));
    goto out;
  }
  BS_CHECK(read_file(preset_or_file, &text));
  BS_CHECK(bs_model_parse(text, preset_or_file, scale, out));
out:
  free(text);
  return st;
}

void bs_model_free(bs_model_spec *m) {
  if (!m)
    return;
  free(m->t);
  memset(m, 0, sizeof *m);
}
