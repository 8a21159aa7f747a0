/* The collective watchdog: one thread per world watching one slot per local
 * rank. A rank arms its slot when it enters a collective and disarms it when
 * the collective returns; the first slot that stays armed longer than the
 * timeout fires the callback once (the world then aborts the communicator on
 * every local rank). Waits inside the backends are bounded by the same
 * timeout, so the watchdog is the second line, not the only one. */
#ifndef BS_WATCHDOG_H
#define BS_WATCHDOG_H

#include <stdbool.h>
#include <stdint.h>

#include "bs_err.h"

typedef struct bs_watchdog bs_watchdog;

/* Runs on the watchdog thread, at most once per watchdog. */
typedef void (*bs_watchdog_fire_fn)(void *ctx, int slot, uint64_t armed_ns);

bs_status bs_watchdog_start(int slots, int timeout_ms, bs_watchdog_fire_fn fire,
                            void *ctx, bs_watchdog **out);
/* As bs_watchdog_start, and tick(ctx) runs on the watchdog thread every
 * period_ms until the watchdog fires or stops (the timeout checks then run
 * as often). */
bs_status bs_watchdog_start_ticking(int slots, int timeout_ms,
                                    bs_watchdog_fire_fn fire,
                                    void (*tick)(void *ctx), int period_ms,
                                    void *ctx, bs_watchdog **out);
/* Its slots and holds without a thread: the waits it would watch bound
 * themselves (a scheduled world's, on virtual time), and read their start
 * here (bs_watchdog_since). */
bs_status bs_watchdog_create(int slots, int timeout_ms, bs_watchdog **out);
/* Joins the thread (if any) and frees; NULL is fine. */
void bs_watchdog_stop(bs_watchdog *wd);
void bs_watchdog_arm(bs_watchdog *wd, int slot);
void bs_watchdog_disarm(bs_watchdog *wd, int slot);
bool bs_watchdog_fired(const bs_watchdog *wd);
/* Slowness is not a stall: ranks that share a few cores (thousands of
 * threads coming up, or taking turns between collectives) are late, not
 * stuck, while others still arrive. Every arrival of a rank in a
 * collective moves the start of every wait to now, so a rank waits a
 * timeout after the world's last progress rather than after its own
 * arrival; a rank that never comes is still found a timeout after the
 * last one that did. at_ns: a monotonic time (another process's too). */
void bs_watchdog_hold(bs_watchdog *wd, uint64_t at_ns);
/* When a wait armed at armed_ns starts counting: armed_ns, or the last
 * hold when later. */
uint64_t bs_watchdog_since(const bs_watchdog *wd, uint64_t armed_ns);

#endif
