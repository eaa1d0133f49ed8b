/* SPDX-License-Identifier: Apache-2.0 */
/* oncebox config show | check: the effective settings and their sources;
** a config file validated before it is installed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "programs/oncebox/cli.h"

static void config_usage(FILE* out) {
  fprintf(out,
          "usage: oncebox [--config FILE] config show [--json]\n"
          "       oncebox config check [FILE]\n"
          "\n"
          "show prints every setting in force, in the file's syntax, with\n"
          "where it came from: a flag, the environment, the file (FILE:LINE)\n"
          "or the default (precedence in that order). Secrets are never\n"
          "shown, only whether they are set.\n"
          "check validates FILE (default: the config file in force, from\n"
          "--config, $ONCEBOX_CONFIG or " OB_CLI_DEFAULT_CONFIG "): exit 0 if\n"
          "it is valid, exit 2 with FILE:LINE and the fault if not. Nothing\n"
          "else is read or written. See docs/config.md.\n");
}

static int config_check(cli_t* cli, const char* path) {
  char* text;
  size_t len;
  int rc;
  if (path == NULL) {
    /* The file in force was read and checked before the command ran. */
    if (cli->config_path == NULL) {
      printf("no config file (%s does not exist)\n", OB_CLI_DEFAULT_CONFIG);
      return EXIT_OK;
    }
    printf("%s: ok\n", cli->config_path);
    return EXIT_OK;
  }
  if (ob__cli_cfg_read_file(path, 1, &text, &len) != 0) return EXIT_USAGE;
  rc = ob__cli_cfg_parse_file(cli, path, text, len);
  free(text);
  if (rc < 0) return EXIT_USAGE;
  printf("%s: ok\n", path);
  return EXIT_OK;
}

int ob__cmd_config(cli_t* cli, int argc, char** argv) {
  int json = 0;
  if (argc < 2 || ob__cli_wants_help(argc, argv)) {
    config_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? EXIT_USAGE : EXIT_OK;
  }
  if (strcmp(argv[1], "check") == 0) {
    if (argc > 3) {
      fprintf(stderr, "oncebox config check: unexpected argument '%s'\n",
              argv[3]);
      return EXIT_USAGE;
    }
    return config_check(cli, argc == 3 ? argv[2] : NULL);
  }
  if (strcmp(argv[1], "show") != 0) {
    fprintf(stderr, "oncebox config: unknown subcommand '%s'\n", argv[1]);
    config_usage(stderr);
    return EXIT_USAGE;
  }
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) {
      json = 1;
    } else {
      fprintf(stderr, "oncebox config show: unexpected argument '%s'\n",
              argv[i]);
      return EXIT_USAGE;
    }
  }
  ob__cli_cfg_show(cli, stdout, json);
  return EXIT_OK;
}
