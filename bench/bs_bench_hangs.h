/* `backstop bench --hangs N`: the labeled corpus of hung and diverged jobs
 * (dumps/bs_corpus.h) scored: N programs of a seed, each run on simulated
 * ranks to PyTorch-format dumps, then `analyze` and `replay` of them
 * (in this process, as the commands run them) against the program's truth
 * (exact roots, group, op number, kind), and torchfrtrace beside them on a
 * sample where asked; with --check, every program's --graph DOT through
 * Graphviz's dot -Tsvg and --trace by the trace rules. `--score DIR` scores
 * folders of dumps PyTorch wrote (tests/fr_torch_prog.py: each with its
 * truth.json) alike, and `--spawn` adds replay --spawn. Every miss prints
 * its seed and program (or folder) so that it reproduces alone. */
#ifndef BS_BENCH_HANGS_H
#define BS_BENCH_HANGS_H

/* argv: the bench command's (`--hangs` among them); the exit status: 0
 * every program scored, 1 a miss, 2 a usage error. */
int bs_bench_hangs_main(int argc, char **argv);

#endif
