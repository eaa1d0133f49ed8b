/* SPDX-License-Identifier: Apache-2.0 */
/* A strict parser of oncebox's INI-like configuration format (docs/config.md),
** driven by a caller's table of sections and typed keys. Pure: it reads only
** the bytes it is given, keeps no state between calls and writes nothing but
** the caller's buffers. */
#ifndef OB_PROGRAMS_ONCEBOX_CONFIG_PARSE_H
#define OB_PROGRAMS_ONCEBOX_CONFIG_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* Limits a file must keep to (each a parse error past it). */
#define OB_CFG_MAX_LINE 4096       /* bytes of one line, end of line excluded */
#define OB_CFG_MAX_BYTES (1 << 20) /* bytes of a whole file */
#define OB_CFG_MAX_SECTIONS 256    /* section headers in a file */
#define OB_CFG_MAX_KEYS 64         /* keys of one section in a schema */
#define OB_CFG_MAX_SUB 64          /* bytes of the SUB of [name.SUB] */

/* The type of a key's value, and the syntax each accepts in a file:
** STRING   a bare word (printable ASCII, no space, '"' or '#') or a
**          "double-quoted string" (UTF-8; escapes \" \\ \n \t only)
** BOOL     true false yes no on off
** INT      decimal digits, optionally after '-'
** SIZE     digits with an optional K, M or G (powers of 1024; KiB, MiB, GiB
**          and a trailing B are accepted too): bytes
** DURATION digits with a unit ms, s, m, h or d: milliseconds
** NUMBER   digits with an optional fraction (0.25), optionally after '-'
** ENUM     one of the key's choices, exactly */
typedef enum {
  OB_CFG_STRING,
  OB_CFG_BOOL,
  OB_CFG_INT,
  OB_CFG_SIZE,
  OB_CFG_DURATION,
  OB_CFG_NUMBER,
  OB_CFG_ENUM
} ob_cfg_type_t;

typedef struct ob_cfg_key_s {
  const char* name;        /* [a-z0-9_]+ */
  ob_cfg_type_t type;
  int64_t min, max;        /* INT, SIZE (bytes), DURATION (ms): the range */
  double dmin, dmax;       /* NUMBER: the range */
  const char* word;        /* INT/SIZE/DURATION: a bare word taken as
                           ** word_value (e.g. "auto"); NULL: none */
  int64_t word_value;
  const char* const* choices;  /* ENUM: NULL-terminated */
  int id;                  /* the caller's, handed back in ob_cfg_value_t */
} ob_cfg_key_t;

typedef struct ob_cfg_section_s {
  const char* name;        /* [a-z0-9_]+ */
  int subs;                /* 0: only [name]; 1: [name] and [name.SUB] (SUB:
                           ** 1..OB_CFG_MAX_SUB of [A-Za-z0-9_.:-]) */
  const ob_cfg_key_t* keys;
  size_t nkeys;            /* at most OB_CFG_MAX_KEYS */
} ob_cfg_section_t;

typedef struct ob_cfg_schema_s {
  const ob_cfg_section_t* sections;
  size_t nsections;
  /* Appended to the error for a key that looks like a secret
  ** (ob__cfg_looks_secret): where secrets go instead. NULL: nothing. */
  const char* secret_hint;
} ob_cfg_schema_t;

/* One setting as the parser hands it over. Every pointer is valid only
** during the callback. */
typedef struct ob_cfg_value_s {
  const ob_cfg_section_t* section;
  const char* sub;         /* the SUB of [name.SUB], "" for [name] */
  const ob_cfg_key_t* key;
  int line;                /* 1-based */
  int64_t i;               /* INT, SIZE, DURATION (ms), BOOL (0/1), ENUM
                           ** (the index in choices) */
  double d;                /* NUMBER */
  const char* s;           /* STRING: decoded, NUL-terminated (no NUL in it) */
  size_t len;              /* STRING: strlen(s) */
} ob_cfg_value_t;

/* Called once per key line, in file order. Return 0 to go on; anything else
** stops the parse, which then returns OB_EINVAL with why (a phrase, written
** by the callback, NUL-terminated) in its error after "NAME:LINE: ". */
typedef int (*ob_cfg_cb)(void* ctx, const ob_cfg_value_t* v, char* why,
                         size_t whylen);

/*
** Parse text[0..n), the contents of the file `name` (used in messages only),
** against schema, calling cb for each key line.
**
** The format: lines end in "\n" (or "\r\n"); a UTF-8 byte-order mark may
** open the file. Blank lines and lines whose first non-blank character is
** '#' are ignored. "[name]" / "[name.SUB]" opens a section; "key = value"
** (blanks around '=' optional) sets a key of the open section; a value may
** be followed by blanks and a "# comment". Leading blanks are allowed.
**
** ^Returns 0 when the whole text is valid and every callback returned 0.
** ^Returns OB_EINVAL at the first fault, with err = "NAME:LINE: what", e.g.
** "/etc/oncebox/oncebox.conf:12: unknown key 'bach' in [engine]". Faults: a
** NUL byte, a control character other than tab, invalid UTF-8, a line over
** OB_CFG_MAX_LINE bytes, a text over OB_CFG_MAX_BYTES, a malformed line, a
** key outside a section, an unknown section or key, a section header or key
** given twice (a section may not be reopened), a bad value for the key's
** type or out of its range, anything after a value but a comment, more than
** OB_CFG_MAX_SECTIONS headers, and a key that is unknown and looks like a
** secret (ob__cfg_looks_secret; the error then carries schema->secret_hint).
** ^No error quotes a STRING value or any value of an unknown key (it may be
** a secret); other bad values are quoted, cut to 40 bytes.
** err is truncated to errlen, always NUL-terminated; NULL/0 writes nothing.
** Never allocates (the state of a parse is about 9 KiB of stack).
*/
int ob__cfg_parse(const char* name, const char* text, size_t n,
                  const ob_cfg_schema_t* schema, ob_cfg_cb cb, void* ctx,
                  char* err, size_t errlen);

/*
** Parse one value s[0..n) for key k as the file's bare values are parsed
** (no quotes: a STRING is s itself), for the same key given by a flag or an
** environment variable. unit_ms is the unit of a DURATION written without
** one (1000 for a flag that takes seconds); 0: a unit is required.
** ^Returns 0 with *out filled (out->s points into s for a STRING), or
** OB_EINVAL with why set to a phrase such as "expects an integer 1..10000".
** out->section, sub and line are left as they were. Never allocates.
*/
int ob__cfg_parse_value(const ob_cfg_key_t* k, const char* s, size_t n,
                        int64_t unit_ms, ob_cfg_value_t* out, char* why,
                        size_t whylen);

/* 1 if the key name s[0..n) looks like it holds a secret (it contains
** secret, password, passwd, token, authorization, credential, private_key,
** access_key, api_key, apikey or bearer), else 0. This function can't
** fail. */
int ob__cfg_looks_secret(const char* s, size_t n);

#endif
