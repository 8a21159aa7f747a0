/* What an op's names say, by PyTorch's words: the collective in a
 * profiling name, how its ranks' sizes relate, a dtype's name. */
#include "bs_dumps.h"

#include <string.h>

bs_dumps_form bs_dumps_op_form(const char *op) {
  if (strstr(op, "all_to_all") || strstr(op, "alltoall"))
    return BS_DUMPS_ALL_TO_ALL;
  if (strstr(op, "gather") && !strstr(op, "all"))
    return BS_DUMPS_GATHER;
  if (strstr(op, "scatter") && !strstr(op, "reduce"))
    return BS_DUMPS_SCATTER;
  return BS_DUMPS_EVEN;
}

const char *bs_dumps_op_name(const char *profiling_name) {
  const char *colon = strrchr(profiling_name, ':');
  return colon ? colon + 1 : profiling_name;
}

bool bs_dumps_op_dtype(const char *torch, bs_dtype *out) {
  static const struct {
    const char *name;
    bs_dtype dt;
  } map[] = {{"BFloat16", BS_BF16}, {"Float", BS_F32}, {"Int", BS_I32},
             {"Long", BS_I64},      {"Byte", BS_U8},   {"UInt8", BS_U8}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strcmp(torch, map[i].name) == 0) {
      *out = map[i].dt;
      return true;
    }
  return false;
}
