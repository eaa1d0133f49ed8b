/* SPDX-License-Identifier: Apache-2.0 */
/* AWS configuration: environment, ~/.aws/credentials, ~/.aws/config. */
#include "platform/aws/aws_config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mbedtls/platform_util.h>

#include "core/util/errbuf.h"
#include "core/util/secret.h"
#include "oncebox.h"

#define MAX_FILE_BYTES (1024 * 1024)

const char* ob__aws_getenv_system(void* ctx, const char* name) {
  (void)ctx;
  return getenv(name);
}

/* ---------------------------------------------------------------------------
** Small helpers.
*/
static int lower(int ch) {
  return (ch >= 'A' && ch <= 'Z') ? ch + ('a' - 'A') : ch;
}

static int ieq(const char* a, const char* b) {
  for (; *a && *b; a++, b++)
    if (lower((unsigned char)*a) != lower((unsigned char)*b)) return 0;
  return *a == *b;
}

/* Environment value, with "" treated as unset. */
static const char* env_get(ob__aws_getenv_fn fn, void* ctx, const char* name) {
  const char* v = fn(ctx, name);
  return (v != NULL && *v != '\0') ? v : NULL;
}

/* Printable ASCII without spaces: key ids and secrets. */
static int token_ok(const char* s, int allow_slash_comma) {
  if (s == NULL || *s == '\0') return 0;
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch <= 0x20 || ch >= 0x7f) return 0;
    if (!allow_slash_comma && (ch == '/' || ch == ',')) return 0;
  }
  return 1;
}

/* What SigV4 accepts in a credential scope. */
static int region_ok(const char* s) {
  if (s == NULL || *s == '\0' || strlen(s) > 64) return 0;
  for (; *s; s++) {
    int ch = (unsigned char)*s;
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
          (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_'))
      return 0;
  }
  return 1;
}

/* ---------------------------------------------------------------------------
** Endpoint URLs.
*/
static int host_char(int ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
         ch == '.' || ch == '_';
}

int ob__aws_endpoint_parse(const char* url, ob__aws_endpoint_t* out) {
  const char* p;
  const char* host;
  size_t host_len;
  unsigned long port = 0;
  int v6 = 0;

  if (out == NULL) return OB_EINVAL;
  memset(out, 0, sizeof *out);
  if (url == NULL) return OB_EINVAL;
  for (p = url; *p; p++)
    if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f) goto fail;
  if (strncasecmp(url, "https://", 8) == 0) {
    out->tls = 1;
    p = url + 8;
  } else if (strncasecmp(url, "http://", 7) == 0) {
    p = url + 7;
  } else {
    goto fail;
  }
  if (*p == '[') {
    const char* rb = strchr(p, ']');
    if (rb == NULL) goto fail;
    host = p + 1;
    host_len = (size_t)(rb - host);
    for (size_t i = 0; i < host_len; i++) {
      int ch = lower((unsigned char)host[i]);
      if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') ||
            ch == ':' || ch == '.'))
        goto fail;
    }
    v6 = 1;
    p = rb + 1;
  } else {
    host = p;
    while (*p && *p != ':' && *p != '/') {
      if (!host_char(lower((unsigned char)*p))) goto fail;
      p++;
    }
    host_len = (size_t)(p - host);
  }
  if (host_len == 0 || host_len >= sizeof out->host) goto fail;
  if (*p == ':') {
    p++;
    if (*p < '0' || *p > '9') goto fail;
    while (*p >= '0' && *p <= '9') {
      port = port * 10 + (unsigned long)(*p - '0');
      if (port > 65535) goto fail;
      p++;
    }
    if (port == 0) goto fail;
  }
  /* Nothing but an optional "/" may follow: SQS posts to "/". */
  if (*p == '/') p++;
  if (*p != '\0') goto fail;
  for (size_t i = 0; i < host_len; i++)
    out->host[i] = (char)lower((unsigned char)host[i]);
  out->host[host_len] = '\0';
  if (port == 0) port = out->tls ? 443 : 80;
  out->port = (unsigned)port;
  if (port == (out->tls ? 443u : 80u))
    snprintf(out->host_header, sizeof out->host_header, "%s%s%s",
             v6 ? "[" : "", out->host, v6 ? "]" : "");
  else
    snprintf(out->host_header, sizeof out->host_header, "%s%s%s:%u",
             v6 ? "[" : "", out->host, v6 ? "]" : "", out->port);
  snprintf(out->url, sizeof out->url, "%s://%s/", out->tls ? "https" : "http",
           out->host_header);
  return 0;
fail:
  memset(out, 0, sizeof *out);
  return OB_EINVAL;
}

/* ---------------------------------------------------------------------------
** The AWS INI dialect. A file is parsed whole (so duplicates are seen) into
** sections of key/value pairs; values are wiped when the file is freed.
*/
typedef struct ini_kv_s {
  char* key;
  char* value;
  int line;
} ini_kv_t;

typedef struct ini_section_s {
  char* name;       /* as written between the brackets, trimmed */
  int line;
  ini_kv_t* kv;
  size_t n, cap;
} ini_section_t;

typedef struct ini_s {
  const char* path;
  int present;      /* the file existed */
  ini_section_t* sec;
  size_t n, cap;
} ini_t;

static void ini_free(ini_t* f) {
  for (size_t i = 0; i < f->n; i++) {
    ini_section_t* s = &f->sec[i];
    for (size_t k = 0; k < s->n; k++) {
      ob__free_secret(s->kv[k].key);
      ob__free_secret(s->kv[k].value);
    }
    free(s->kv);
    free(s->name);
  }
  free(f->sec);
  f->sec = NULL;
  f->n = f->cap = 0;
}

static char* dup_range(const char* a, const char* b) {
  char* s = malloc((size_t)(b - a) + 1);
  if (s == NULL) return NULL;
  memcpy(s, a, (size_t)(b - a));
  s[b - a] = '\0';
  return s;
}

static void trim(const char** a, const char** b) {
  while (*a < *b && (**a == ' ' || **a == '\t')) (*a)++;
  while (*b > *a && ((*b)[-1] == ' ' || (*b)[-1] == '\t')) (*b)--;
}

/* Parse text (NUL-terminated, writable) into f. */
static int ini_parse(ini_t* f, char* text, char* err, size_t errlen) {
  char* line = text;
  int lineno = 0;
  int nested = 0;   /* inside the indented block of a `key =` line */
  ini_section_t* cur = NULL;

  while (line != NULL && *line != '\0') {
    char* nl = strchr(line, '\n');
    char* end = nl ? nl : line + strlen(line);
    const char* a = line;
    const char* b = end;
    int indented;

    lineno++;
    if (b > a && b[-1] == '\r') b--;
    indented = (*a == ' ' || *a == '\t');
    trim(&a, &b);
    if (a == b || *a == '#' || *a == ';') goto next;
    if (indented) {
      /* Sub-properties (`s3 =` then indented `k = v`) are skipped. */
      if (nested && memchr(a, '=', (size_t)(b - a)) != NULL) goto next;
      return ob__errbuf_set(err, errlen, OB_EINVAL,
                            "%s:%d: unexpected indented line (only "
                            "sub-properties of a 'key =' line with an empty "
                            "value may be indented)", f->path, lineno);
    }
    nested = 0;
    if (*a == '[') {
      const char* na = a + 1;
      const char* nb = b;
      if (b[-1] != ']' || b - a < 2) {
        return ob__errbuf_set(err, errlen, OB_EINVAL,
                              "%s:%d: section header without a closing ']'",
                              f->path, lineno);
      }
      nb = b - 1;
      trim(&na, &nb);
      if (na == nb) {
        return ob__errbuf_set(err, errlen, OB_EINVAL,
                              "%s:%d: empty section name", f->path, lineno);
      }
      for (size_t i = 0; i < f->n; i++)
        if (strlen(f->sec[i].name) == (size_t)(nb - na) &&
            memcmp(f->sec[i].name, na, (size_t)(nb - na)) == 0) {
          return ob__errbuf_set(err, errlen, OB_EINVAL,
                                "%s:%d: section repeats the one on line %d",
                                f->path, lineno, f->sec[i].line);
        }
      if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 8;
        ini_section_t* ns = realloc(f->sec, cap * sizeof *ns);
        if (ns == NULL) return OB_ENOMEM;
        f->sec = ns;
        f->cap = cap;
      }
      cur = &f->sec[f->n];
      memset(cur, 0, sizeof *cur);
      cur->line = lineno;
      cur->name = dup_range(na, nb);
      if (cur->name == NULL) return OB_ENOMEM;
      f->n++;
      goto next;
    }
    {
      const char* eq = memchr(a, '=', (size_t)(b - a));
      const char* ka = a;
      const char* kb;
      const char* va;
      const char* vb = b;
      ini_kv_t* kv;
      if (eq == NULL) {
        return ob__errbuf_set(err, errlen, OB_EINVAL,
                              "%s:%d: expected 'key = value' or '[section]'",
                              f->path, lineno);
      }
      kb = eq;
      va = eq + 1;
      trim(&ka, &kb);
      trim(&va, &vb);
      if (ka == kb) {
        return ob__errbuf_set(err, errlen, OB_EINVAL,
                              "%s:%d: missing key name before '='", f->path,
                              lineno);
      }
      if (cur == NULL) {
        return ob__errbuf_set(err, errlen, OB_EINVAL,
                              "%s:%d: setting before the first [section]",
                              f->path, lineno);
      }
      for (size_t i = 0; i < cur->n; i++)
        if (strlen(cur->kv[i].key) == (size_t)(kb - ka) &&
            strncasecmp(cur->kv[i].key, ka, (size_t)(kb - ka)) == 0) {
          return ob__errbuf_set(err, errlen, OB_EINVAL,
                                "%s:%d: key repeats the one on line %d",
                                f->path, lineno, cur->kv[i].line);
        }
      if (cur->n == cur->cap) {
        size_t cap = cur->cap ? cur->cap * 2 : 8;
        ini_kv_t* nk = realloc(cur->kv, cap * sizeof *nk);
        if (nk == NULL) return OB_ENOMEM;
        cur->kv = nk;
        cur->cap = cap;
      }
      kv = &cur->kv[cur->n];
      memset(kv, 0, sizeof *kv);
      kv->line = lineno;
      kv->key = dup_range(ka, kb);
      kv->value = dup_range(va, vb);
      if (kv->key == NULL || kv->value == NULL) {
        free(kv->key);
        ob__free_secret(kv->value);
        return OB_ENOMEM;
      }
      cur->n++;
      nested = (va == vb);
    }
  next:
    line = nl ? nl + 1 : NULL;
  }
  return 0;
}

/* Read and parse path into f. A missing file leaves f empty. */
static int ini_load(ini_t* f, const char* path, char* err, size_t errlen) {
  int fd = -1;
  struct stat st;
  char* buf = NULL;
  size_t got = 0;
  int rc;

  memset(f, 0, sizeof *f);
  f->path = path;
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return 0;
    return ob__errbuf_set(err, errlen, OB_EIO, "%s: cannot open: %s", path,
                          strerror(errno));
  }
  f->present = 1;
  if (fstat(fd, &st) != 0) {
    rc = ob__errbuf_set(err, errlen, OB_EIO, "%s: cannot stat: %s", path,
                        strerror(errno));
    goto fail;
  }
  if (!S_ISREG(st.st_mode)) {
    rc = ob__errbuf_set(err, errlen, OB_EIO, "%s: not a regular file", path);
    goto fail;
  }
  if (st.st_size > MAX_FILE_BYTES) {
    rc = ob__errbuf_set(err, errlen, OB_ETOOBIG, "%s: larger than %d bytes",
                        path, MAX_FILE_BYTES);
    goto fail;
  }
  buf = malloc((size_t)st.st_size + 1);
  if (buf == NULL) {
    rc = OB_ENOMEM;
    goto fail;
  }
  while (got < (size_t)st.st_size) {
    ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      rc = ob__errbuf_set(err, errlen, OB_EIO, "%s: read failed: %s", path,
                          strerror(errno));
      goto fail;
    }
    if (n == 0) break;
    got += (size_t)n;
  }
  buf[got] = '\0';
  if (memchr(buf, '\0', got) != NULL) {
    rc = ob__errbuf_set(err, errlen, OB_EINVAL,
                        "%s: contains a NUL byte (not a text file)", path);
    goto fail;
  }
  rc = ini_parse(f, buf, err, errlen);
  if (rc == OB_ENOMEM) ob__errbuf_set(err, errlen, 0,
                                      "out of memory reading %s", path);
  if (rc < 0) goto fail;
  mbedtls_platform_zeroize(buf, got);
  free(buf);
  close(fd);
  return 0;
fail:
  if (buf != NULL) {
    mbedtls_platform_zeroize(buf, (size_t)st.st_size + 1);
    free(buf);
  }
  if (fd >= 0) close(fd);
  ini_free(f);
  return rc;
}

static const ini_section_t* ini_section(const ini_t* f, const char* name) {
  for (size_t i = 0; i < f->n; i++)
    if (strcmp(f->sec[i].name, name) == 0) return &f->sec[i];
  return NULL;
}

/* The config file names profiles "[profile NAME]" (and "[default]"). */
static const ini_section_t* config_profile(const ini_t* f, const char* name) {
  for (size_t i = 0; i < f->n; i++) {
    const char* s = f->sec[i].name;
    if (strncmp(s, "profile", 7) == 0 && (s[7] == ' ' || s[7] == '\t')) {
      s += 8;
      while (*s == ' ' || *s == '\t') s++;
      if (strcmp(s, name) == 0) return &f->sec[i];
    }
  }
  if (strcmp(name, "default") == 0) return ini_section(f, "default");
  return NULL;
}

static const ini_kv_t* ini_get(const ini_section_t* s, const char* key) {
  if (s == NULL) return NULL;
  for (size_t i = 0; i < s->n; i++)
    if (ieq(s->kv[i].key, key)) return &s->kv[i];
  return NULL;
}

/* ---------------------------------------------------------------------------
** Loading.
*/
typedef struct loader_s {
  ob__aws_getenv_fn env;
  void* env_ctx;
  char* err;
  size_t errlen;
  ini_t cred;
  ini_t conf;
  char cred_path[4096];
  char conf_path[4096];
  const ini_section_t* cred_sec;  /* [NAME] in the credentials file */
  const ini_section_t* conf_sec;  /* [profile NAME] in the config file */
} loader_t;

static int default_path(loader_t* L, const char* var, const char* leaf,
                        char* out, size_t outlen) {
  const char* v = env_get(L->env, L->env_ctx, var);
  const char* home;
  if (v != NULL) {
    if (strlen(v) >= outlen) {
      return ob__errbuf_set(L->err, L->errlen, OB_EINVAL, "%s is too long",
                            var);
    }
    snprintf(out, outlen, "%s", v);
    return 0;
  }
  home = env_get(L->env, L->env_ctx, "HOME");
  if (home == NULL) {
    out[0] = '\0';   /* no home, no shared files */
    return 0;
  }
  if (snprintf(out, outlen, "%s/%s", home, leaf) >= (int)outlen) {
    return ob__errbuf_set(L->err, L->errlen, OB_EINVAL, "HOME is too long");
  }
  return 0;
}

/* A profile value: credentials file first, then config file. */
static const ini_kv_t* profile_get(const loader_t* L, const char* key,
                                   const char** file) {
  const ini_kv_t* kv = ini_get(L->cred_sec, key);
  if (kv != NULL) {
    *file = L->cred_path;
    return kv;
  }
  kv = ini_get(L->conf_sec, key);
  *file = L->conf_path;
  return kv;
}

static int copy_str(char** dst, const char* src, loader_t* L) {
  *dst = strdup(src);
  if (*dst == NULL) {
    return ob__errbuf_set(L->err, L->errlen, OB_ENOMEM, "out of memory");
  }
  return 0;
}

/* ---------------------------------------------------------------------------
** systemd credentials: LoadCredential=NAME:PATH puts a file NAME in
** $CREDENTIALS_DIRECTORY (a private, read-only ramfs only the service can
** read), which keeps the secret out of the environment (/proc/PID/environ,
** `systemctl show`). One value per file; a single trailing newline ("\n" or
** "\r\n") is stripped, as `echo KEY > file` leaves one.
*/
#define MAX_CREDENTIAL_BYTES 8192

/* Read DIR/name into *out (malloc'd, NUL-terminated). 0 with *out NULL when
** the file does not exist; < 0 with the reason in L->err (which names the
** file, never its content). */
static int read_credential(loader_t* L, const char* dir, const char* name,
                           char** out) {
  char path[4096];
  char* buf;
  struct stat st;
  size_t got = 0;
  int fd, rc = 0;

  *out = NULL;
  if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
    return ob__errbuf_set(L->err, L->errlen, OB_EINVAL,
                          "CREDENTIALS_DIRECTORY is too long");
  fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENOENT) return 0;
    return ob__errbuf_set(L->err, L->errlen, OB_EIO,
                          "credential %s: cannot open: %s", path,
                          strerror(errno));
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return ob__errbuf_set(L->err, L->errlen, OB_EIO,
                          "credential %s: not a regular file", path);
  }
  if (st.st_size > MAX_CREDENTIAL_BYTES) {
    close(fd);
    return ob__errbuf_set(L->err, L->errlen, OB_ETOOBIG,
                          "credential %s: larger than %d bytes", path,
                          MAX_CREDENTIAL_BYTES);
  }
  /* One byte more than the limit: a file that grew after fstat is caught. */
  buf = malloc(MAX_CREDENTIAL_BYTES + 2);
  if (buf == NULL) {
    close(fd);
    return ob__errbuf_set(L->err, L->errlen, OB_ENOMEM, "out of memory");
  }
  for (;;) {
    ssize_t n = read(fd, buf + got, MAX_CREDENTIAL_BYTES + 1 - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      rc = ob__errbuf_set(L->err, L->errlen, OB_EIO,
                          "credential %s: read failed: %s", path,
                          strerror(errno));
      break;
    }
    if (n == 0) break;
    got += (size_t)n;
    if (got > MAX_CREDENTIAL_BYTES) {
      rc = ob__errbuf_set(L->err, L->errlen, OB_ETOOBIG,
                          "credential %s: larger than %d bytes", path,
                          MAX_CREDENTIAL_BYTES);
      break;
    }
  }
  close(fd);
  if (rc == 0) {
    if (got > 0 && buf[got - 1] == '\n') got--;
    if (got > 0 && buf[got - 1] == '\r') got--;
    buf[got] = '\0';
    if (memchr(buf, '\0', got) != NULL)
      rc = ob__errbuf_set(L->err, L->errlen, OB_EINVAL,
                          "credential %s: contains a NUL byte", path);
  }
  if (rc < 0) {
    mbedtls_platform_zeroize(buf, MAX_CREDENTIAL_BYTES + 2);
    free(buf);
    return rc;
  }
  *out = buf;
  return 0;
}

static void free_secret(char* s) {
  if (s == NULL) return;
  mbedtls_platform_zeroize(s, strlen(s));
  free(s);
}

/* Keys from $CREDENTIALS_DIRECTORY: 1 if found (cfg filled), 0 if the
** variable is unset or holds neither key file, < 0 on error. The same
** validation as the environment variables. */
static int load_credentials_dir(loader_t* L, ob__aws_config_t* cfg) {
  const char* dir = env_get(L->env, L->env_ctx, "CREDENTIALS_DIRECTORY");
  char* id = NULL;
  char* secret = NULL;
  char* token = NULL;
  int rc;

  if (dir == NULL) return 0;
  if ((rc = read_credential(L, dir, "aws_access_key_id", &id)) < 0 ||
      (rc = read_credential(L, dir, "aws_secret_access_key", &secret)) < 0 ||
      (rc = read_credential(L, dir, "aws_session_token", &token)) < 0)
    goto done;
  if (id == NULL && secret == NULL) {
    rc = 0;   /* other credentials only: the ~/.aws files are next */
    goto done;
  }
  if (id == NULL || secret == NULL) {
    rc = ob__errbuf_set(L->err, L->errlen, OB_EINVAL,
                        "credential %s is in CREDENTIALS_DIRECTORY but %s is "
                        "not", id ? "aws_access_key_id" : "aws_secret_access_key",
                        id ? "aws_secret_access_key" : "aws_access_key_id");
    goto done;
  }
  if (!token_ok(id, 0)) {
    rc = ob__errbuf_set(L->err, L->errlen, OB_EINVAL,
                        "credential aws_access_key_id is empty or contains "
                        "spaces, control characters, '/' or ','");
    goto done;
  }
  if (!token_ok(secret, 1)) {
    rc = ob__errbuf_set(L->err, L->errlen, OB_EINVAL,
                        "credential aws_secret_access_key is empty or contains "
                        "spaces or control characters");
    goto done;
  }
  if (token != NULL && token[0] != '\0' && !token_ok(token, 1)) {
    rc = ob__errbuf_set(L->err, L->errlen, OB_EINVAL,
                        "credential aws_session_token contains spaces or "
                        "control characters");
    goto done;
  }
  /* Ownership moves to cfg (ob__aws_config_free wipes them). */
  cfg->access_key_id = id;
  cfg->secret_access_key = secret;
  id = secret = NULL;
  if (token != NULL && token[0] != '\0') {
    cfg->session_token = token;
    token = NULL;
  }
  snprintf(cfg->credentials_source, sizeof cfg->credentials_source,
           "systemd credentials (%.400s: aws_access_key_id%s)", dir,
           cfg->session_token ? ", aws_session_token" : "");
  rc = 1;
done:
  free_secret(id);
  free_secret(secret);
  free_secret(token);
  return rc;
}

static int load_credentials(loader_t* L, ob__aws_config_t* cfg) {
  const char* id = env_get(L->env, L->env_ctx, "AWS_ACCESS_KEY_ID");
  const char* secret = env_get(L->env, L->env_ctx, "AWS_SECRET_ACCESS_KEY");
  const char* token = env_get(L->env, L->env_ctx, "AWS_SESSION_TOKEN");
  const ini_kv_t* kid;
  const ini_kv_t* ksec;
  const ini_kv_t* ktok;
  const char* fid;
  const char* fsec;
  const char* ftok;
  static const char* const unsupported[] = {
      "role_arn", "credential_process", "sso_session", "sso_start_url",
      "web_identity_token_file", "credential_source"};
  int rc;

  if (id != NULL || secret != NULL) {
    if (id == NULL || secret == NULL) {
      return ob__errbuf_set(L->err, L->errlen, OB_EINVAL,
                            "%s is set but %s is not",
                            id ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                            id ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
    }
    if (!token_ok(id, 0)) {
      return ob__errbuf_set(L->err, L->errlen, OB_EINVAL,
                            "AWS_ACCESS_KEY_ID contains spaces, control "
                            "characters, '/' or ','");
    }
    if (!token_ok(secret, 1)) {
      return ob__errbuf_set(L->err, L->errlen, OB_EINVAL,
                            "AWS_SECRET_ACCESS_KEY contains spaces or control "
                            "characters");
    }
    if (token != NULL && !token_ok(token, 1)) {
      return ob__errbuf_set(L->err, L->errlen, OB_EINVAL,
                            "AWS_SESSION_TOKEN contains spaces or control "
                            "characters");
    }
    if ((rc = copy_str(&cfg->access_key_id, id, L)) < 0 ||
        (rc = copy_str(&cfg->secret_access_key, secret, L)) < 0 ||
        (token && (rc = copy_str(&cfg->session_token, token, L)) < 0))
      return rc;
    snprintf(cfg->credentials_source, sizeof cfg->credentials_source,
             "environment (AWS_ACCESS_KEY_ID%s)",
             token ? ", AWS_SESSION_TOKEN" : "");
    return 0;
  }
  /* Explicit environment keys > the service's credentials > ~/.aws. */
  rc = load_credentials_dir(L, cfg);
  if (rc != 0) return rc < 0 ? rc : 0;

  kid = profile_get(L, "aws_access_key_id", &fid);
  ksec = profile_get(L, "aws_secret_access_key", &fsec);
  ktok = profile_get(L, "aws_session_token", &ftok);
  for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++) {
    const char* f;
    const ini_kv_t* kv = profile_get(L, unsupported[i], &f);
    if (kv != NULL) {
      return ob__errbuf_set(L->err, L->errlen, OB_EINVAL,
                            "%s:%d: profile '%s' uses %s, which oncebox does "
                            "not support; give it aws_access_key_id and "
                            "aws_secret_access_key, or set AWS_ACCESS_KEY_ID "
                            "and AWS_SECRET_ACCESS_KEY", f, kv->line,
                            cfg->profile, unsupported[i]);
    }
  }
  if (kid == NULL && ksec == NULL) {
    return ob__errbuf_set(L->err, L->errlen, OB_EINVAL,
                          "no AWS credentials: set AWS_ACCESS_KEY_ID and "
                          "AWS_SECRET_ACCESS_KEY, or add aws_access_key_id and "
                          "aws_secret_access_key to profile '%s' in %s",
                          cfg->profile,
                          L->cred_path[0] ? L->cred_path : "~/.aws/credentials");
  }
  if (kid == NULL || ksec == NULL) {
    return ob__errbuf_set(L->err, L->errlen, OB_EINVAL,
                          "%s:%d: profile '%s' has %s but no %s",
                          kid ? fid : fsec, kid ? kid->line : ksec->line,
                          cfg->profile,
                          kid ? "aws_access_key_id" : "aws_secret_access_key",
                          kid ? "aws_secret_access_key" : "aws_access_key_id");
  }
  if (!token_ok(kid->value, 0)) {
    return ob__errbuf_set(L->err, L->errlen, OB_EINVAL,
                          "%s:%d: aws_access_key_id is empty or contains "
                          "spaces, control characters, '/' or ','", fid,
                          kid->line);
  }
  if (!token_ok(ksec->value, 1)) {
    return ob__errbuf_set(L->err, L->errlen, OB_EINVAL,
                          "%s:%d: aws_secret_access_key is empty or contains "
                          "spaces or control characters", fsec, ksec->line);
  }
  if (ktok != NULL && ktok->value[0] != '\0' && !token_ok(ktok->value, 1)) {
    return ob__errbuf_set(L->err, L->errlen, OB_EINVAL,
                          "%s:%d: aws_session_token contains spaces or control "
                          "characters", ftok, ktok->line);
  }
  if ((rc = copy_str(&cfg->access_key_id, kid->value, L)) < 0 ||
      (rc = copy_str(&cfg->secret_access_key, ksec->value, L)) < 0 ||
      (ktok && ktok->value[0] &&
       (rc = copy_str(&cfg->session_token, ktok->value, L)) < 0))
    return rc;
  snprintf(cfg->credentials_source, sizeof cfg->credentials_source,
           "%.440s [%s%.60s]", fid, fid == L->conf_path ? "profile " : "",
           cfg->profile);
  return 0;
}

static int load_region(loader_t* L, const ob__aws_overrides_t* ov,
                       ob__aws_config_t* cfg) {
  static const char* const vars[] = {"AWS_REGION", "AWS_DEFAULT_REGION"};
  const ini_kv_t* kv;

  if (ov != NULL && ov->region != NULL) {
    if (!region_ok(ov->region)) {
      return ob__errbuf_set(L->err, L->errlen, OB_EINVAL,
                            "the region given is invalid (letters, digits, "
                            "'-', '.', '_')");
    }
    snprintf(cfg->region_source, sizeof cfg->region_source, "override");
    return copy_str(&cfg->region, ov->region, L);
  }
  for (size_t i = 0; i < 2; i++) {
    const char* v = env_get(L->env, L->env_ctx, vars[i]);
    if (v == NULL) continue;
    if (!region_ok(v)) {
      return ob__errbuf_set(L->err, L->errlen, OB_EINVAL,
                            "%s is not a valid region (letters, digits, '-', "
                            "'.', '_')", vars[i]);
    }
    snprintf(cfg->region_source, sizeof cfg->region_source, "%s", vars[i]);
    return copy_str(&cfg->region, v, L);
  }
  kv = ini_get(L->conf_sec, "region");
  if (kv != NULL) {
    if (!region_ok(kv->value)) {
      return ob__errbuf_set(L->err, L->errlen, OB_EINVAL,
                            "%s:%d: region is not valid (letters, digits, '-', "
                            "'.', '_'; comments must be on their own line)",
                            L->conf_path, kv->line);
    }
    snprintf(cfg->region_source, sizeof cfg->region_source, "%.400s [%.100s]",
             L->conf_path, L->conf_sec->name);
    return copy_str(&cfg->region, kv->value, L);
  }
  return ob__errbuf_set(L->err, L->errlen, OB_EINVAL,
                        "no AWS region: set AWS_REGION (or "
                        "AWS_DEFAULT_REGION), or region in profile '%s' of %s",
                        cfg->profile,
                        L->conf_path[0] ? L->conf_path : "~/.aws/config");
}

static int load_endpoint(loader_t* L, const ob__aws_overrides_t* ov,
                         ob__aws_config_t* cfg) {
  static const char* const vars[] = {"AWS_ENDPOINT_URL_SQS",
                                     "AWS_ENDPOINT_URL"};
  const char* url = NULL;
  char where[4200] = "";
  char def[300];
  const ini_kv_t* kv;

  if (ov != NULL && ov->endpoint != NULL) {
    url = ov->endpoint;
    snprintf(where, sizeof where, "the endpoint given");
  }
  for (size_t i = 0; url == NULL && i < 2; i++) {
    url = env_get(L->env, L->env_ctx, vars[i]);
    if (url != NULL) snprintf(where, sizeof where, "%s", vars[i]);
  }
  if (url == NULL && (kv = ini_get(L->conf_sec, "endpoint_url")) != NULL &&
      kv->value[0] != '\0') {
    url = kv->value;
    snprintf(where, sizeof where, "%s:%d: endpoint_url", L->conf_path,
             kv->line);
    snprintf(cfg->endpoint_source, sizeof cfg->endpoint_source,
             "%.440s:%d: endpoint_url", L->conf_path, kv->line);
  } else {
    snprintf(cfg->endpoint_source, sizeof cfg->endpoint_source, "%.500s",
             where);
  }
  if (url != NULL) {
    if (ob__aws_endpoint_parse(url, &cfg->endpoint) != 0) {
      return ob__errbuf_set(L->err, L->errlen, OB_EINVAL,
                            "%s is not a valid endpoint: expected "
                            "http(s)://host[:port] with no path, query or user "
                            "info", where);
    }
    cfg->endpoint_explicit = 1;
    /* Plain http only because someone wrote http:// on purpose, and even
    ** then only with the opt-in (ob__aws_plain_http_check). */
    cfg->allow_plain_http = !cfg->endpoint.tls;
    return 0;
  }
  cfg->endpoint_source[0] = '\0';
  snprintf(def, sizeof def, "https://sqs.%s.amazonaws.com", cfg->region);
  if (ob__aws_endpoint_parse(def, &cfg->endpoint) != 0) {
    return ob__errbuf_set(L->err, L->errlen, OB_EINVAL,
                          "the region does not make a valid host name");
  }
  return 0;
}

static int load_misc(loader_t* L, const ob__aws_overrides_t* ov,
                     ob__aws_config_t* cfg) {
  const char* ca = ov != NULL ? ov->ca_file : NULL;
  const char* v;
  const ini_kv_t* kv;
  int rc;

  v = env_get(L->env, L->env_ctx, "ONCEBOX_SQS_ALLOW_HTTP");
  cfg->allow_http_env = v == NULL ? 0 : strcmp(v, "1") == 0 ? 1 : -1;

  if (ca == NULL) ca = env_get(L->env, L->env_ctx, "AWS_CA_BUNDLE");
  if (ca == NULL && (kv = ini_get(L->conf_sec, "ca_bundle")) != NULL &&
      kv->value[0] != '\0')
    ca = kv->value;
  if (ca != NULL && (rc = copy_str(&cfg->ca_file, ca, L)) < 0) return rc;

  v = env_get(L->env, L->env_ctx, "AWS_MAX_ATTEMPTS");
  kv = NULL;
  if (v == NULL && (kv = ini_get(L->conf_sec, "max_attempts")) != NULL)
    v = kv->value;
  if (v != NULL) {
    char* end;
    long n;
    errno = 0;
    n = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || n < 1 || n > 20) {
      if (kv != NULL)
        ob__errbuf_set(L->err, L->errlen, 0,
                       "%s:%d: max_attempts must be an integer from 1 to 20",
                       L->conf_path, kv->line);
      else
        ob__errbuf_set(L->err, L->errlen, 0,
                       "AWS_MAX_ATTEMPTS must be an integer from 1 to 20");
      return OB_EINVAL;
    }
    cfg->max_attempts = (int)n;
  }
  return 0;
}

int ob__aws_config_load(ob__aws_config_t* cfg, ob__aws_getenv_fn getenv_fn,
                       void* env_ctx, const ob__aws_overrides_t* overrides,
                       char* errbuf, size_t errlen) {
  loader_t L;
  const char* profile;
  int explicit_profile = 1;
  int rc;

  if (cfg == NULL) return OB_EINVAL;
  memset(cfg, 0, sizeof *cfg);
  memset(&L, 0, sizeof L);
  if (errbuf != NULL && errlen > 0) errbuf[0] = '\0';
  L.env = getenv_fn != NULL ? getenv_fn : ob__aws_getenv_system;
  L.env_ctx = env_ctx;
  L.err = errbuf;
  L.errlen = errlen;

  profile = overrides != NULL ? overrides->profile : NULL;
  if (profile == NULL) profile = env_get(L.env, L.env_ctx, "AWS_PROFILE");
  if (profile == NULL) {
    profile = "default";
    explicit_profile = 0;
  }
  if (strchr(profile, ']') != NULL || strchr(profile, '\n') != NULL ||
      strlen(profile) > 256) {
    rc = ob__errbuf_set(errbuf, errlen, OB_EINVAL,
                        "the profile name is not valid");
    goto fail;
  }
  if ((rc = copy_str(&cfg->profile, profile, &L)) < 0) goto fail;

  if ((rc = default_path(&L, "AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials",
                         L.cred_path, sizeof L.cred_path)) < 0 ||
      (rc = default_path(&L, "AWS_CONFIG_FILE", ".aws/config", L.conf_path,
                         sizeof L.conf_path)) < 0)
    goto fail;
  if (L.cred_path[0] && (rc = ini_load(&L.cred, L.cred_path, errbuf, errlen)) < 0)
    goto fail;
  if (L.conf_path[0] && (rc = ini_load(&L.conf, L.conf_path, errbuf, errlen)) < 0)
    goto fail;
  L.cred_sec = ini_section(&L.cred, profile);
  L.conf_sec = config_profile(&L.conf, profile);
  if (explicit_profile && L.cred_sec == NULL && L.conf_sec == NULL) {
    rc = ob__errbuf_set(errbuf, errlen, OB_EINVAL,
                        "profile '%s' not found in %s or %s (config sections "
                        "are written [profile %s])", profile,
                        L.cred_path[0] ? L.cred_path : "(no credentials file)",
                        L.conf_path[0] ? L.conf_path : "(no config file)",
                        profile);
    goto fail;
  }

  if ((rc = load_credentials(&L, cfg)) < 0 ||
      (rc = load_region(&L, overrides, cfg)) < 0 ||
      (rc = load_endpoint(&L, overrides, cfg)) < 0 ||
      (rc = load_misc(&L, overrides, cfg)) < 0)
    goto fail;
  ini_free(&L.cred);
  ini_free(&L.conf);
  return 0;
fail:
  ini_free(&L.cred);
  ini_free(&L.conf);
  ob__aws_config_free(cfg);
  return rc;
}

int ob__aws_plain_http_check(ob__aws_config_t* cfg, int allow, char* warn,
                             size_t warnlen, char* errbuf, size_t errlen) {
  const char* source;
  if (warn != NULL && warnlen > 0) warn[0] = '\0';
  if (errbuf != NULL && errlen > 0) errbuf[0] = '\0';
  if (cfg == NULL) return OB_EINVAL;
  if (cfg->endpoint.tls) return 0;
  /* An http:// endpoint is always an explicit one; name where it was set. */
  source = cfg->endpoint_source[0] ? cfg->endpoint_source : "the endpoint";
  if (!allow && cfg->allow_http_env != 1) {
    cfg->plain_http_allowed = 0;
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL,
                          "%s is http://%s: plain HTTP sends the signed "
                          "requests and the session token in clear; use "
                          "https://, or set ONCEBOX_SQS_ALLOW_HTTP=1 "
                          "(--sqs-allow-http, allow_http) for a local test "
                          "server%s", source, cfg->endpoint.host_header,
                          cfg->allow_http_env < 0
                              ? " (ONCEBOX_SQS_ALLOW_HTTP is set, but only "
                                "the value 1 opts in)"
                              : "");
  }
  cfg->plain_http_allowed = 1;
  if (warn != NULL && warnlen > 0)
    snprintf(warn, warnlen,
             "%s is http://%s: plain HTTP allowed by %s: the signed requests "
             "and the session token travel in clear and SQS's answers can be "
             "forged; for a local test server only", source,
             cfg->endpoint.host_header,
             allow ? "the opt-in (--sqs-allow-http, allow_http)"
                   : "ONCEBOX_SQS_ALLOW_HTTP=1");
  return 1;
}

void ob__aws_config_free(ob__aws_config_t* cfg) {
  if (cfg == NULL) return;
  free(cfg->access_key_id);
  ob__free_secret(cfg->secret_access_key);
  ob__free_secret(cfg->session_token);
  free(cfg->region);
  free(cfg->profile);
  free(cfg->ca_file);
  mbedtls_platform_zeroize(cfg, sizeof *cfg);
}
