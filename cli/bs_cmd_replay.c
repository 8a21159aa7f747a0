#include "bs_cmd.h"
int bs_cmd_replay(int argc, char **argv) { (void)argc; (void)argv; return 2; }
