/* Element types of tensors and collectives. */
#ifndef BS_DTYPE_H
#define BS_DTYPE_H

#include <stddef.h>

typedef enum bs_dtype {
  BS_BF16 = 0,
  BS_F32,
  BS_I32,
  BS_I64,
  BS_U8,
  BS_DTYPE_COUNT
} bs_dtype;

size_t bs_dtype_size(bs_dtype dt);
const char *bs_dtype_name(bs_dtype dt); /* "bf16", "fp32", "int32", ... */
/* Parses a name as written in model specs ("bf16", "fp32", "int32", ...);
 * returns -1 when unknown. */
int bs_dtype_parse(const char *s);

#endif
