#include "bs_dumps_finding.h"

const char *bs_dumps_finding_mismatch_name(bs_dumps_mismatch k) {
  static const char *const names[] = {
      [BS_DUMPS_MISMATCH_NONE] = "",       [BS_DUMPS_MISMATCH_OP] = "op",
      [BS_DUMPS_MISMATCH_SIZE] = "size",   [BS_DUMPS_MISMATCH_DTYPE] = "dtype",
      [BS_DUMPS_MISMATCH_SHAPE] = "shape",
  };
  return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}
