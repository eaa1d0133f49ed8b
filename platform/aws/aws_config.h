/* SPDX-License-Identifier: Apache-2.0 */
/*
** AWS configuration, read the way the AWS CLI and SDKs read it: environment
** variables, then the shared files ~/.aws/credentials and ~/.aws/config.
**
** Internal to oncebox (platform layer): the CLI and the SQS relay/consumer
** use it. Not thread-safe; call it at start-up (it reads two small files
** synchronously, which is fine before the loop runs).
**
** Sources, highest precedence first (AWS SDKs and Tools reference guide,
** "standardized credential providers" and "config file settings"):
**
**   credentials  overrides->access_key_id/secret (tests, tools), then
**                AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN),
**                then the files aws_access_key_id, aws_secret_access_key
**                (+ aws_session_token) in $CREDENTIALS_DIRECTORY (systemd's
**                LoadCredential=; one value per file, one trailing newline
**                stripped, at most 8 KiB each, validated as the variables),
**                then the profile: aws_access_key_id, aws_secret_access_key,
**                aws_session_token from the credentials file section [NAME],
**                else from the config file section [profile NAME] ([default]
**                for the default profile). Environment keys win over
**                AWS_PROFILE, as in the AWS CLI (botocore). Note: the AWS SDK
**                for JavaScript v3 does the reverse when AWS_PROFILE is set.
**   profile      overrides->profile, AWS_PROFILE, else "default".
**   files        AWS_SHARED_CREDENTIALS_FILE (default $HOME/.aws/credentials),
**                AWS_CONFIG_FILE (default $HOME/.aws/config). A missing file
**                is the same as an empty one; an unreadable one is an error.
**   region       overrides->region, AWS_REGION, AWS_DEFAULT_REGION, the
**                profile's `region` in the config file.
**   endpoint     overrides->endpoint, AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL,
**                the profile's `endpoint_url`; default
**                https://sqs.<region>.amazonaws.com. An http:// endpoint is
**                parsed only from one of these explicit settings (the default
**                is always https and nothing falls back to http), sets
**                allow_plain_http and names its source in endpoint_source;
**                it is still not used without the opt-in below.
**   plain HTTP   ONCEBOX_SQS_ALLOW_HTTP=1 (exactly "1"), read into
**                allow_http_env. Loading never refuses an http:// endpoint:
**                ob__aws_plain_http_check does, at the relay's and the
**                consumer's enable and in `oncebox sqs` (docs/security.md,
**                "Plain HTTP").
**   CA bundle    overrides->ca_file, AWS_CA_BUNDLE, the profile's ca_bundle;
**                NULL means the HTTP client's default bundle.
**   attempts     AWS_MAX_ATTEMPTS, the profile's max_attempts (1..20);
**                0 means the SQS client's default (3).
** An empty environment variable counts as unset, as in the SDKs.
**
** File syntax (the subset of the AWS INI dialect the CLI writes): `[section]`
** headers, `key = value` lines, whole-line comments starting with '#' or
** ';', blank lines, and indented sub-property lines under a key with an
** empty value (`s3 =` followed by `  max_concurrent_requests = 10`), which
** are skipped. A repeated section or key in one file, a key before the
** first section, an unterminated header or a line with no '=' is an error,
** as in botocore's strict parser. Profiles that need something other than
** static keys (role_arn, credential_process, sso_*, web_identity_token_file)
** are refused with a specific message.
**
** Secrets: the secret key and session token live only in this struct's
** heap strings (and in transient file buffers that are wiped) and are wiped
** with mbedtls_platform_zeroize by ob__aws_config_free. No error message ever
** contains a value read from a file or the environment: messages name the
** variable, or the file and line. The one exception is the endpoint in the
** plain-HTTP messages, and only in its normalised form (scheme, host and
** port: user info, paths and queries are refused by the parser, so they
** can't carry a password or a signature).
*/
#ifndef OB_PLATFORM_AWS_CONFIG_H
#define OB_PLATFORM_AWS_CONFIG_H

#include <stddef.h>
#include <stdint.h>

/* Environment lookup: the value of `name`, or NULL. The returned string
** needs to live only until the next lookup. */
typedef const char* (*ob__aws_getenv_fn)(void* ctx, const char* name);

/* The process environment (getenv). ctx is ignored. */
const char* ob__aws_getenv_system(void* ctx, const char* name);

/* Values that beat every other source (NULL: not overridden). */
typedef struct ob__aws_overrides_s {
  const char* profile;
  const char* region;
  const char* endpoint;
  const char* ca_file;
} ob__aws_overrides_t;

/* A parsed endpoint URL: scheme://host[:port][/]. No user info, path,
** query or fragment (SQS's JSON protocol always posts to "/"). */
typedef struct ob__aws_endpoint_s {
  int tls;              /* https */
  char host[256];       /* lower-cased; IPv6 literal without brackets */
  unsigned port;        /* explicit, or 443 / 80 */
  /* What the HTTP client sends as Host (and what SigV4 must sign): host, or
  ** host:port when the port is not the scheme's default; [v6] bracketed. */
  char host_header[272];
  char url[288];        /* normalised: "https://" host_header "/" */
} ob__aws_endpoint_t;

/* Parse an endpoint. Returns 0, or OB_EINVAL (and `out` zeroed) for
** anything else: other schemes, user info, a path other than "/", a query,
** a bad host or port. */
int ob__aws_endpoint_parse(const char* url, ob__aws_endpoint_t* out);

typedef struct ob__aws_config_s {
  char* access_key_id;
  char* secret_access_key;  /* secret: wiped on free */
  char* session_token;      /* secret: wiped on free; NULL if none */
  char* region;             /* e.g. "eu-west-1" */
  char* profile;            /* the profile name in effect */
  char* ca_file;            /* NULL: the HTTP client's default bundle */
  ob__aws_endpoint_t endpoint;
  int endpoint_explicit;    /* 1: configured, 0: the regional default */
  /* 1 for an explicit http:// endpoint: the configuration ASKS for plain
  ** HTTP. Not a permission: see plain_http_allowed. */
  int allow_plain_http;
  int max_attempts;         /* 0: the client's default */
  /* Where things came from, for `oncebox sqs` diagnostics (no values):
  ** "environment", "/home/u/.aws/credentials [prod]", "override". */
  char credentials_source[512];
  char region_source[512];
  /* Where an explicit endpoint came from, "" for the default:
  ** "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL", "the endpoint given"
  ** (overrides->endpoint) or "/home/u/.aws/config:7: endpoint_url". */
  char endpoint_source[512];
  /* ONCEBOX_SQS_ALLOW_HTTP: 1 when it is "1", -1 when set to anything else
  ** (which does not opt in), 0 when unset or empty. */
  int allow_http_env;
  /* 1 once ob__aws_plain_http_check let an http:// endpoint through;
  ** ob__sqs_client_config_from_aws hands it to the client, which refuses
  ** http:// without it. */
  int plain_http_allowed;
} ob__aws_config_t;

/*
** Load the configuration. getenv_fn NULL means ob__aws_getenv_system;
** overrides may be NULL. On success returns 0 and fills *cfg (release with
** ob__aws_config_free). On failure *cfg is zeroed, nothing is allocated, a
** negative code is returned and errbuf (if not NULL) receives a specific
** message that names the variable or file:line but never a value:
**   OB_EINVAL    a malformed file, variable or endpoint; no credentials;
**                no region; a profile that was asked for and not found; a
**                profile that needs an unsupported credential provider
**   OB_EIO       a file exists but cannot be read (errno text included)
**   OB_ETOOBIG   a file over 1 MiB
**   OB_ENOMEM
*/
int ob__aws_config_load(ob__aws_config_t* cfg, ob__aws_getenv_fn getenv_fn,
                       void* env_ctx, const ob__aws_overrides_t* overrides,
                       char* errbuf, size_t errlen);

/*
** The plain-HTTP rule (docs/security.md, "Plain HTTP"). Over http:// the
** signed requests and the session token travel in clear and anyone on the
** path can forge SQS's answers (a 200 that makes the relay mark rows
** published, a receive of messages nobody sent), so an http:// endpoint,
** wherever it was configured, is used only with an explicit opt-in:
** `allow` (the caller's:
** allow_http in ob_relay_options_t / ob_consumer_options_t, the CLI's
** --sqs-allow-http) or ONCEBOX_SQS_ALLOW_HTTP=1 (cfg->allow_http_env). A
** loopback host gets no exemption: a test server opts in like any other.
**
** Returns 0 when the endpoint is https (warn then gets ""); 1 when it is
** http:// and opted in: cfg->plain_http_allowed is set and warn (if not
** NULL) gets one line for a warn-level log naming the source and the
** endpoint; OB_EINVAL when it is http:// without the opt-in: errbuf (if
** not NULL) names the source and the endpoint and says how to opt in, e.g.
**   AWS_ENDPOINT_URL_SQS is http://127.0.0.1:4566: plain HTTP sends the
**   signed requests and the session token in clear; use https://, or set
**   ONCEBOX_SQS_ALLOW_HTTP=1 (--sqs-allow-http, allow_http) for a local
**   test server
** Neither message holds a credential, a path or a query: only the
** normalised scheme, host and port. cfg NULL is OB_EINVAL.
*/
int ob__aws_plain_http_check(ob__aws_config_t* cfg, int allow, char* warn,
                             size_t warnlen, char* errbuf, size_t errlen);

/* Wipe the secrets, free everything, zero *cfg. NULL and a zeroed struct
** are fine; calling it twice is fine. This function can't fail. */
void ob__aws_config_free(ob__aws_config_t* cfg);

#endif
