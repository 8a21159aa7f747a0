/* The process-global firing log: what the "explained" oracle reads to trace
 * every error back to a fault that fired. Ranks are threads, so it locks. */
#include "bs_fault_control.h"

#include <pthread.h>

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static bs_fault_fired log_entries[BS_FAULT_LOG_MAX];
static size_t log_total; /* firings, including those past the table */

void bs_fault_log_add(const bs_fault_fired *f) {
  pthread_mutex_lock(&log_mu);
  if (log_total < BS_FAULT_LOG_MAX)
    log_entries[log_total] = *f;
  log_total++;
  pthread_mutex_unlock(&log_mu);
}

static size_t kept(void) {
  return log_total < BS_FAULT_LOG_MAX ? log_total : BS_FAULT_LOG_MAX;
}

size_t bs_fault_log_count(void) {
  pthread_mutex_lock(&log_mu);
  size_t n = kept();
  pthread_mutex_unlock(&log_mu);
  return n;
}

size_t bs_fault_log_total(void) {
  pthread_mutex_lock(&log_mu);
  size_t n = log_total;
  pthread_mutex_unlock(&log_mu);
  return n;
}

bool bs_fault_log_get(size_t i, bs_fault_fired *out) {
  pthread_mutex_lock(&log_mu);
  bool ok = out && i < kept();
  if (ok)
    *out = log_entries[i];
  pthread_mutex_unlock(&log_mu);
  return ok;
}

void bs_fault_log_reset(void) {
  pthread_mutex_lock(&log_mu);
  log_total = 0;
  pthread_mutex_unlock(&log_mu);
}
