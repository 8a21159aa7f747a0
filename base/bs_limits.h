/* Sizes every part agrees on, below the parts that enforce them (the
 * world, the DDP layout, the paused-read trap, replay, the engines, the
 * CLI). */
#ifndef BS_LIMITS_H
#define BS_LIMITS_H

/* The most ranks a world holds: the limit of --ranks, of the DDP layout and
 * of a replay's dumps alike (the size of the largest real jobs: Llama 3
 * trained on 16,384 GPUs). */
#define BS_WORLD_MAX_RANKS 16384
/* The most engine processes a world starts: above it a process serves
 * several ranks in a row (bs_engine_start_world); the footprint counts
 * them. */
#define BS_ENGINE_PROCS_MAX 256
/* The most ranks one engine process serves, then. */
#define BS_ENGINE_GROUP_MAX                                                    \
  ((BS_WORLD_MAX_RANKS + BS_ENGINE_PROCS_MAX - 1) / BS_ENGINE_PROCS_MAX)

#endif
