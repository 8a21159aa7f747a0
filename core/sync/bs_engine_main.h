/* The engine process's entry: the binary's hidden `engine` command, which
 * the actors execute (bs_engine.h says how they start it). Apart from the
 * engine's client, so that the command line sees this one call. */
#ifndef BS_ENGINE_MAIN_H
#define BS_ENGINE_MAIN_H

/* The engine process body: argv[0] is "engine", then --fd N --rank R
 * [--idle-ms T] (longest wait for the next update, default 600000). Exit
 * status: 0 after QUIT, 1 when the trainer closed the connection, 2 usage,
 * 3 protocol error, 4 out of memory. "engine --zygote --fd N": the zygote
 * that forks engines on socket N (bs_engine_zygote.h), exit 0 once it
 * closes. */
int bs_engine_main(int argc, char **argv);

#endif
