/* Picks a device backend by name, and the fallback of the cuda backend for
 * builds without CUDA (so callers need no #ifdef). */
#include "dev/bs_dev.h"

#include <string.h>

bs_status bs_dev_create(const char *kind, int device, bs_dev **out) {
  if (!kind || !out)
    return bs_err_fail(BS_ERR_INVALID, NULL, "device: no kind or no output");
  if (strcmp(kind, "host") == 0)
    return bs_dev_host_create(out);
  if (strcmp(kind, "cuda") == 0)
    return bs_dev_cuda_create(device, out);
  return bs_err_fail(BS_ERR_INVALID, NULL,
                     "unknown device kind '%s' (expected host or cuda)", kind);
}

void bs_dev_destroy(bs_dev *d) {
  if (d && d->ops && d->ops->destroy)
    d->ops->destroy(d);
}

#ifndef BS_HAVE_CUDA
int bs_dev_cuda_count(void) {
  return 0;
}

/* Arguments are checked as the real backend checks them, so a caller sees
 * the same error on every build. */
bs_status bs_dev_cuda_create(int device, bs_dev **out) {
  if (!out || device < 0)
    return bs_err_fail(BS_ERR_INVALID, NULL, "cuda device %d: bad argument",
                       device);
  *out = NULL;
  return bs_err_fail(BS_ERR_UNSUPPORTED, NULL,
                     "no CUDA device %d: built without CUDA", device);
}
#endif
