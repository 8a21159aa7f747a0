#include "bs_dtype.h"

#include <string.h>

static const struct {
  const char *name;
  size_t size;
} table[BS_DTYPE_COUNT] = {
    [BS_BF16] = {"bf16", 2}, [BS_F32] = {"fp32", 4}, [BS_I32] = {"int32", 4},
    [BS_I64] = {"int64", 8}, [BS_U8] = {"uint8", 1},
};

size_t bs_dtype_size(bs_dtype dt) {
  return (unsigned)dt < BS_DTYPE_COUNT ? table[dt].size : 0;
}

const char *bs_dtype_name(bs_dtype dt) {
  return (unsigned)dt < BS_DTYPE_COUNT ? table[dt].name : "unknown";
}

int bs_dtype_parse(const char *s) {
  for (int i = 0; i < BS_DTYPE_COUNT; i++)
    if (strcmp(s, table[i].name) == 0)
      return i;
  return -1;
}
