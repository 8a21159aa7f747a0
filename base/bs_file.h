/* Files the processes of one job share (process-per-rank runs: the NCCL
 * unique id, record parts, verdicts, shared failures; artifacts): folders
 * made on demand, files published whole, and files waited for with a
 * bound. */
#ifndef BS_FILE_H
#define BS_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "bs_err.h"

/* mkdir -p. BS_ERR_INVALID naming the folder that could not be made. */
bs_status bs_file_mkdir_p(const char *path);

/* Writes the n bytes to a temporary file beside path, then renames it: a
 * reader sees the whole file or none. */
bs_status bs_file_publish(const char *path, const void *data, size_t n);

/* Whether bs_file_publish could write path, by doing what it does: path is
 * not there or a regular file, and the temporary it writes beside path is
 * made and removed (as root too, where access() says yes to anything).
 * BS_ERR_INVALID naming path and why. */
bs_status bs_file_probe(const char *path);
/* Whether files can be made in the folder path: one there is written to
 * (a folder made and removed in it), one that is not is made (mkdir -p)
 * and removed again with the folders it needed. BS_ERR_INVALID naming
 * path and why: a file, not a folder, or what mkdir said. */
bs_status bs_file_probe_dir(const char *path);

/* Reads path whole (*data NUL-terminated, caller frees). BS_ERR_INVALID
 * naming path and why. */
bs_status bs_file_read(const char *path, char **data, size_t *n);

/* bs_file_read once path exists, polling until wait_ms have passed:
 * BS_ERR_TIMEOUT then. */
bs_status bs_file_wait(const char *path, int wait_ms, char **data, size_t *n);

/* bs_file_wait that also gives up, with BS_ERR_ABORTED, once stop(arg) is
 * true (a waiter whose peers have already failed). */
bs_status bs_file_wait_or(const char *path, int wait_ms,
                          bool (*stop)(const void *), const void *arg,
                          char **data, size_t *n);

/* Waits until every one of the n paths exists, wait_ms for all of them:
 * BS_ERR_TIMEOUT naming the first missing one then. */
bs_status bs_file_wait_all(const char *const *paths, size_t n, int wait_ms);

/* A fresh folder <base>/<prefix>.XXXXXX for a job's shared files, in
 * memory (/dev/shm) where there is one, else in /tmp: the sim's board of
 * hundreds of processes is a file there, and on a disk every page of it
 * its ranks touch is read in and written back. out: n bytes.
 * BS_ERR_INTERNAL naming the folder that could not be made.
 *
 * The folder is locked (flock) for as long as a process that made it, or
 * a fork of one, lives or until bs_file_remove_tree removes it: a process
 * killed outright (SIGKILL) leaves its folder unlocked, and the next one
 * made with the same prefix removes every such folder of that prefix
 * untouched for an hour (by then no run of a version without the lock
 * still uses it). */
bs_status bs_file_scratch(const char *prefix, char *out, size_t n);

/* Removes path and everything under it (rm -rf); a path that is not there
 * is fine. BS_ERR_INVALID naming what could not be removed. */
bs_status bs_file_remove_tree(const char *path);

#endif
