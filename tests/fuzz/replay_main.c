/* SPDX-License-Identifier: Apache-2.0 */
/*
** Corpus replay: a main() for the fuzz targets when libFuzzer is not there
** (gcc builds, CI). Every file named on the command line, and every regular
** file in every directory named (recursively, in sorted order), goes through
** LLVMFuzzerTestOneInput once, in an exact-size heap buffer so that
** AddressSanitizer builds catch a read one past the end.
**
** usage: ob-fuzz-replay-T [--allow-missing] PATH...
**
** A path that does not exist is an error unless --allow-missing precedes it
** (the crasher directory of a target may be empty, and git keeps no empty
** directories). Replaying no file at all is an error: a misconfigured test
** must not pass silently. A crash, an ASan/UBSan report or a failed property
** aborts the process, which fails the ctest test; the file being replayed is
** printed first so the failing input is named.
*/
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static size_t g_files;
static int g_verbose;

static int replay_file(const char* path) {
  FILE* f = fopen(path, "rb");
  uint8_t* buf = NULL;
  size_t len = 0, cap = 0;
  if (f == NULL) {
    fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
    return -1;
  }
  for (;;) {
    size_t n;
    if (len == cap) {
      size_t ncap = cap ? cap * 2 : 4096;
      uint8_t* nb = realloc(buf, ncap);
      if (nb == NULL) {
        fprintf(stderr, "replay: out of memory reading %s\n", path);
        free(buf);
        fclose(f);
        return -1;
      }
      buf = nb;
      cap = ncap;
    }
    n = fread(buf + len, 1, cap - len, f);
    len += n;
    if (n == 0) break;
  }
  if (ferror(f)) {
    fprintf(stderr, "replay: cannot read %s\n", path);
    free(buf);
    fclose(f);
    return -1;
  }
  fclose(f);
  {
    /* Exact size: nothing readable past the input, as under libFuzzer. */
    uint8_t* exact = malloc(len ? len : 1);
    if (exact == NULL) {
      free(buf);
      return -1;
    }
    if (len) memcpy(exact, buf, len);
    free(buf);
    if (g_verbose) fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
    /* Named before running, so a crash report follows the culprit's name. */
    else fprintf(stderr, "%s\n", path);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
  }
  g_files++;
  return 0;
}

static int cmp_str(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

static int replay_path(const char* path, int allow_missing);

static int replay_dir(const char* path) {
  DIR* d = opendir(path);
  struct dirent* de;
  char** names = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  if (d == NULL) {
    fprintf(stderr, "replay: cannot open directory %s: %s\n", path,
            strerror(errno));
    return -1;
  }
  /* readdir's NULL is both the end and an error (EOVERFLOW with a 32-bit
  ** off_t, EIO): an unreadable corpus must fail, not replay nothing. */
  errno = 0;
  while ((de = readdir(d)) != NULL) {
    char* full;
    size_t need;
    /* Skip ".", "..", and hidden files such as .gitkeep. */
    if (de->d_name[0] == '.') continue;
    if (n == cap) {
      size_t ncap = cap ? cap * 2 : 64;
      char** nn = realloc(names, ncap * sizeof *nn);
      if (nn == NULL) {
        rc = -1;
        break;
      }
      names = nn;
      cap = ncap;
    }
    need = strlen(path) + strlen(de->d_name) + 2;
    full = malloc(need);
    if (full == NULL) {
      rc = -1;
      break;
    }
    snprintf(full, need, "%s/%s", path, de->d_name);
    names[n++] = full;
    errno = 0;
  }
  if (rc == 0 && errno != 0) {
    fprintf(stderr, "replay: cannot read directory %s: %s\n", path,
            strerror(errno));
    rc = -1;
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, cmp_str);
  for (size_t i = 0; i < n; i++) {
    if (rc == 0 && replay_path(names[i], 0) != 0) rc = -1;
    free(names[i]);
  }
  free(names);
  return rc;
}

static int replay_path(const char* path, int allow_missing) {
  struct stat st;
  if (stat(path, &st) != 0) {
    if (allow_missing && errno == ENOENT) return 0;
    fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
    return -1;
  }
  if (S_ISDIR(st.st_mode)) return replay_dir(path);
  if (S_ISREG(st.st_mode)) return replay_file(path);
  return 0;
}

int main(int argc, char** argv) {
  int allow_missing = 0;
  g_verbose = getenv("OB_FUZZ_REPLAY_VERBOSE") != NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--allow-missing") == 0) {
      allow_missing = 1;
      continue;
    }
    if (replay_path(argv[i], allow_missing) != 0) return 2;
    allow_missing = 0;
  }
  if (g_files == 0) {
    fprintf(stderr, "replay: no input file found (arguments wrong?)\n");
    return 2;
  }
  printf("replayed %zu inputs through %s: ok\n", g_files, argv[0]);
  return 0;
}
