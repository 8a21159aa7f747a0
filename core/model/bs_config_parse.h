/* Settings from their text ("KEY=VALUE", --set's): the parser of
 * bs_config.h's keys. Only the planner (harness/plan, harness/explore),
 * the commands and the core itself include it; every floor of a run below
 * the planner reads the configuration the planner resolved (bs_run.h),
 * and ci/layers.py fails an include of this header there (PARSERS). */
#ifndef BS_CONFIG_PARSE_H
#define BS_CONFIG_PARSE_H

#include "bs_err.h"
#include "model/bs_config.h"

/* Sets one key. BS_ERR_INVALID naming the key and the accepted values for an
 * unknown key or a bad value; cfg is unchanged then. */
bs_status bs_config_set(bs_config *cfg, const char *key, const char *value);
/* The CLI form "KEY=VALUE". */
bs_status bs_config_set_kv(bs_config *cfg, const char *kv);
/* Parses KEY=VALUE as bs_config_set_kv does (its errors), into a setting
 * bs_config_apply sets. */
bs_status bs_config_setting_parse(const char *kv, bs_config_setting *out);

#endif
