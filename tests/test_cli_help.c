/* Help where people look (docs/cli.md): every command answers `--help` and
 * `backstop help COMMAND`; `backstop` alone names every command; `help run`
 * lists every --set key of the configuration's key table with what it
 * accepts; a typo of a command, scenario, label, fault point or --set key
 * gets the nearest name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_test_cli.h"
#include "model/bs_config.h"

static const char *const commands[] = {"list",    "faults", "explain", "run",
                                       "mutants", "sweep",  "fuzz",    "bench",
                                       "analyze", "replay", "help"};

static int setup(void **state) {
  (void)state;
  return cli_setup("bs_help_");
}

static int teardown(void **state) {
  (void)state;
  return cli_teardown();
}

static void says(const char *args, int rc, const char *text) {
  assert_int_equal(backstop(args), rc);
  const char *where = rc == 0 ? out_text : err_text;
  if (!strstr(where, text))
    fail_msg("backstop %s: '%s' lacks '%s'", args, where, text);
}

static void test_every_command_answers_help(void **state) {
  (void)state;
  char args[64], usage[64];
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    snprintf(usage, sizeof usage, "usage: backstop %s", commands[i]);
    snprintf(args, sizeof args, "%s --help", commands[i]);
    says(args, 0, usage);
    snprintf(args, sizeof args, "help %s", commands[i]);
    says(args, 0, usage);
    if (strcmp(commands[i], "bench") != 0) { /* bench parses its own */
      snprintf(args, sizeof args, "%s -x -h", commands[i]);
      says(args, 0, usage);
    }
  }
}

static void test_no_command_names_them_all(void **state) {
  (void)state;
  assert_int_equal(backstop(""), 2);
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    char word[32];
    snprintf(word, sizeof word, " %s", commands[i]);
    if (!strstr(err_text, word))
      fail_msg("backstop alone: '%s' lacks%s", err_text, word);
  }
  assert_int_equal(backstop("help"), 0);
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    char line[32];
    snprintf(line, sizeof line, "\n  %s ", commands[i]);
    if (!strstr(out_text, line))
      fail_msg("backstop help lacks the line of %s", commands[i]);
  }
}

static void test_help_run_lists_set_keys(void **state) {
  (void)state;
  assert_int_equal(backstop("help run"), 0);
  size_t n = 0;
  for (const bs_config_key *k = bs_config_keys(); k->name; k++, n++) {
    char line[256], accepts[96];
    bs_config_key_accepts(k, accepts, sizeof accepts);
    snprintf(line, sizeof line, "\n  %-32s %s\n", k->name, accepts);
    if (!strstr(out_text, line))
      fail_msg("help run lacks '%s'", line + 1);
  }
  assert_true(n > 10);
}

static void test_did_you_mean(void **state) {
  (void)state;
  says("rnu", 2, "unknown command 'rnu' (did you mean 'run'?)");
  says("help swep", 2, "(did you mean 'sweep'?)");
  says("run steady-normall", 2, "(did you mean 'steady-normal'?)");
  says("explain engine-deth", 2, "(did you mean 'engine-death'?)");
  says("run @fualt", 2, "unknown label '@fualt' (did you mean '@fault'?)");
  says("run --set colocat=1", 2, "(did you mean 'colocate'?)");
  says("run --mutant local-hash-rise", 2, "(did you mean 'local-hash-raise'?)");
  says("run steady-normal --set zzzzzzzzzzzz=1", 2,
       "`backstop help run` lists the keys");
#ifdef FIU_ENABLE
  says("run --fault name=engine/sned", 2, "(did you mean 'engine/send'?)");
  says("sweep steady-normal --point engine/sen", 2,
       "(did you mean 'engine/send'?)");
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_command_answers_help),
      cmocka_unit_test(test_no_command_names_them_all),
      cmocka_unit_test(test_help_run_lists_set_keys),
      cmocka_unit_test(test_did_you_mean),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
