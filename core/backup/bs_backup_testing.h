/* What white-box tests ask of the backupers and the restore check beyond
 * their public headers. Not a public header. */
#ifndef BS_BACKUP_TESTING_H
#define BS_BACKUP_TESTING_H

#include "backup/bs_backuper.h"
#include "backup/bs_restore_check.h"

/* The restore check of a MainCast backuper (NULL for any other kind). */
bs_restore_check *bs_backuper_maincast_check(bs_backuper *b);

/* Backups hashed so far (at most BS_RCHECK_CYCLES). */
int bs_restore_check_taken(const bs_restore_check *rc);
/* Hashes held for the restores until the next backup. */
bool bs_restore_check_held(const bs_restore_check *rc);
/* Restores compared so far. */
int bs_restore_check_verified(const bs_restore_check *rc);

#endif
