/* The actor's parts and state as white-box tests look at them; the harness
 * sees the actor through bs_actor.h alone. Not a public header. */
#ifndef BS_ACTOR_TESTING_H
#define BS_ACTOR_TESTING_H

#include "backup/bs_backuper.h"
#include "bs_actor.h"
#include "sync/bs_engine.h"
#include "train/bs_optimizer.h"

bs_params *bs_actor_params(bs_actor *a);
bs_optimizer *bs_actor_opt(bs_actor *a);
bs_backuper *bs_actor_backuper(bs_actor *a); /* NULL when backups are off */
bs_engine *bs_actor_engine(bs_actor *a);     /* NULL without engine_exe */
bs_dev *bs_actor_dev(bs_actor *a);
bs_memsaver *bs_actor_ms(bs_actor *a);
/* Its optimizer (the chain the run really built). */
const bs_optimizer *bs_actor_optimizer(const bs_actor *a);
bool bs_actor_asleep(const bs_actor *a);
const char *bs_actor_active_tag(const bs_actor *a);
/* "normal", "maincast" or "none". */
const char *bs_actor_backuper_kind(const bs_actor *a);

#endif
