/* What white-box tests ask of the optimizer beyond its public header. Not a
 * public header. */
#ifndef BS_TRAIN_TESTING_H
#define BS_TRAIN_TESTING_H

#include "train/bs_optimizer.h"

/* Pinned host bytes held by the optimizer (HDO: the host masters with their
 * Adam state and gradient staging), all under BS_PIN_OTHER. */
size_t bs_optimizer_host_master_bytes(const bs_optimizer *o);

#endif
