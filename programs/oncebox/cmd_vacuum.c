/* SPDX-License-Identifier: Apache-2.0 */
/* `oncebox vacuum`: give an existing database the page size of new ones
** (ob_vacuum; docs/decisions/0017-pages-and-wal-for-flash.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "programs/oncebox/cli.h"

static long long file_bytes(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

int ob__cmd_vacuum(cli_t* cli, int argc, char** argv) {
  static const struct option opts[] = {
      {"page-size", required_argument, NULL, 'p'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  long long page = 0, before, after;
  char b1[32], b2[32];
  ob_engine_t* e;
  int c, code, rc, old = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
      case 'p':
        page = ob__cli_parse_count(optarg);
        if (page < 512 || page > 65536 || (page & (page - 1))) {
          fprintf(stderr, "oncebox vacuum: --page-size wants a power of two "
                          "from 512 to 65536, not %s\n", optarg);
          return EXIT_USAGE;
        }
        break;
      case 'h':
        printf("usage: oncebox --db FILE vacuum [--page-size N]\n\n"
               "Rewrite the database with pages of N bytes (default 2048, what\n"
               "a new database gets): the migration step for a database made\n"
               "by an older oncebox with 4096-byte pages, which writes about\n"
               "twice the bytes per message to the flash. Stop every other\n"
               "process on the database first (it is refused while another\n"
               "has it open, and nothing changes). Needs free space of about\n"
               "the file's size and takes time in proportion to it; a crash\n"
               "or power loss leaves the old file whole. Nothing to do when\n"
               "the page size is already N. docs/decisions/0017.\n");
        return EXIT_OK;
      default: return EXIT_USAGE;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "oncebox vacuum: unexpected argument '%s'\n", argv[optind]);
    return EXIT_USAGE;
  }
  e = ob__cli_open_existing(cli, &code);
  if (e == NULL) return code;
  before = file_bytes(cli->db_path);
  rc = ob_vacuum(e, (int)page, &old);
  if (rc < 0) {
    fprintf(stderr, "oncebox vacuum: %s (%s)\n", ob_errmsg(e), ob_err_name(rc));
    ob_close(e);
    return rc == OB_EBUSY ? EXIT_FAIL : rc == OB_ENOSPC ? EXIT_FULL : EXIT_DB;
  }
  ob_close(e);
  after = file_bytes(cli->db_path);
  ob__cli_format_bytes(before, b1, sizeof b1);
  ob__cli_format_bytes(after, b2, sizeof b2);
  if (page == 0) page = 2048;
  if (old == page)
    printf("page size %d already: nothing to do (file %s)\n", old, b1);
  else
    printf("page size %d -> %lld; file %s -> %s\n", old, page, b1, b2);
  return EXIT_OK;
}
