#include "comm/backend/nccl/bs_nccl_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bs_nccl_lib lib;
static char why[600];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* BS_NCCL as given, or its folder's libnccl.so.2; else the loader's. */
static void candidate(char *out, size_t n) {
  const char *env = getenv("BS_NCCL");
  struct stat sb;
  if (env && *env && stat(env, &sb) == 0 && S_ISDIR(sb.st_mode))
    snprintf(out, n, "%s/libnccl.so.2", env);
  else
    snprintf(out, n, "%s", env && *env ? env : "libnccl.so.2");
}

#define SYM(field, name)                                                       \
  do {                                                                         \
    *(void **)&lib.field = dlsym(h, name);                                     \
    if (!lib.field) {                                                          \
      snprintf(why, sizeof why, "%s has no %s", lib.path, name);               \
      return;                                                                  \
    }                                                                          \
  } while (0)

static void load(void) {
  candidate(lib.path, sizeof lib.path);
  void *h = dlopen(lib.path, RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    snprintf(why, sizeof why, "cannot load %s: %s", lib.path, dlerror());
    return;
  }
  SYM(GetVersion, "ncclGetVersion");
  SYM(GetUniqueId, "ncclGetUniqueId");
  SYM(CommInitRankConfig, "ncclCommInitRankConfig");
  SYM(CommGetAsyncError, "ncclCommGetAsyncError");
  SYM(CommAbort, "ncclCommAbort");
  SYM(CommFinalize, "ncclCommFinalize");
  SYM(CommDestroy, "ncclCommDestroy");
  SYM(AllGather, "ncclAllGather");
  SYM(ReduceScatter, "ncclReduceScatter");
  SYM(AllReduce, "ncclAllReduce");
  SYM(Broadcast, "ncclBroadcast");
  SYM(GroupStart, "ncclGroupStart");
  SYM(GroupEnd, "ncclGroupEnd");
  SYM(Send, "ncclSend");
  SYM(Recv, "ncclRecv");
  SYM(GetErrorString, "ncclGetErrorString");
  SYM(GetLastError, "ncclGetLastError");
  if (lib.GetVersion(&lib.version) != ncclSuccess)
    snprintf(why, sizeof why, "%s: ncclGetVersion failed", lib.path);
}

bs_status bs_nccl_lib_get(const bs_nccl_lib **out) {
  pthread_once(&once, load);
  if (why[0])
    return bs_err_fail(BS_ERR_UNSUPPORTED, NULL,
                       "backend nccl: %s (set BS_NCCL to libnccl.so.2 or its "
                       "folder, or LD_LIBRARY_PATH)",
                       why);
  *out = &lib;
  return BS_OK;
}
