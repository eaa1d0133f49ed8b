/* SPDX-License-Identifier: Apache-2.0 */
/*
** oncebox sqs send | receive | attributes: talk to Amazon SQS directly, with
** the same configuration, signer, TLS and retries the relay uses. On a
** terminal they check connectivity and credentials; the tests drive them.
**
** Output never contains a credential: errors print the SQS error code and
** message, configuration errors name the variable or file:line.
*/
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "platform/aws/aws_config.h"
#include "programs/oncebox/cli.h"
#include "platform/sqs/sqs_client.h"

#define MAX_ATTRS 10
#define MAX_RESOLVE 4

typedef struct sqs_opts_s {
  const char* sub;
  const char* queue_url;
  const char* body;
  const char* group_id;
  const char* dedup_id;
  ob__sqs_attr_t attrs[MAX_ATTRS];
  char* attr_buf[MAX_ATTRS];
  size_t nattrs;
  int max;          /* 0: omit */
  int wait;         /* -1: omit */
  int visibility;   /* -1: omit */
  int del;
  int json;
  int allow_http;   /* --sqs-allow-http */
  ob__aws_overrides_t ov;
  ob__http_resolve_t resolve[MAX_RESOLVE];
  char* resolve_buf[MAX_RESOLVE];
  size_t nresolve;
} sqs_opts_t;

typedef struct run_s {
  uv_loop_t loop;
  ob__sqs_client_t* client;
  ob__sqs_req_t req;
  int done;
  int status;
  int closed;
} run_t;

static void usage(FILE* out) {
  fprintf(out,
      "usage: oncebox sqs send --queue-url URL --body TEXT [--attr NAME=VALUE]...\n"
      "                        [--group-id ID] [--dedup-id ID] [--json]\n"
      "       oncebox sqs receive --queue-url URL [--max N] [--wait S]\n"
      "                        [--visibility S] [--delete] [--json]\n"
      "       oncebox sqs attributes --queue-url URL [--json]\n"
      "\n"
      "Talk to Amazon SQS with the configuration the relay uses: checks the\n"
      "endpoint, TLS, credentials and the queue from a terminal.\n"
      "\n"
      "send        SendMessage. --body - reads the body from stdin. --attr\n"
      "            adds a String attribute (NAME:Number=VALUE for a Number),\n"
      "            up to 10. --group-id/--dedup-id for FIFO queues.\n"
      "receive     ReceiveMessage (up to --max 1..10, long poll --wait 0..20 s,\n"
      "            all attributes) and print the messages; --delete deletes\n"
      "            the ones printed.\n"
      "attributes  GetQueueAttributes All.\n"
      "\n"
      "Options for all three:\n"
      "  --region R          instead of AWS_REGION / AWS_DEFAULT_REGION / profile\n"
      "  --endpoint-url URL  instead of AWS_ENDPOINT_URL_SQS / AWS_ENDPOINT_URL\n"
      "  --sqs-allow-http    accept a plain http:// endpoint (or set\n"
      "                      ONCEBOX_SQS_ALLOW_HTTP=1): a local test server\n"
      "                      only, the signed requests and the session token\n"
      "                      travel in clear; without it http:// is refused\n"
      "  --profile NAME      instead of AWS_PROFILE\n"
      "  --ca-bundle FILE    instead of AWS_CA_BUNDLE\n"
      "  --resolve HOST:ADDR connect to ADDR for HOST (tests; like curl)\n"
      "  --json              machine-readable output\n"
      "\n"
      "Credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,\n"
      "then the files aws_access_key_id, aws_secret_access_key and\n"
      "aws_session_token in $CREDENTIALS_DIRECTORY (systemd's LoadCredential=),\n"
      "then the profile in ~/.aws/credentials and ~/.aws/config.\n"
      "Exit codes: 0 ok; 1 the call failed (the SQS error code and message are\n"
      "printed), or the configuration is unusable; 2 usage error, or an\n"
      "http:// endpoint without --sqs-allow-http.\n");
}

static void opts_free(sqs_opts_t* o) {
  for (size_t i = 0; i < o->nattrs; i++) free(o->attr_buf[i]);
  for (size_t i = 0; i < o->nresolve; i++) free(o->resolve_buf[i]);
}

/* NAME=VALUE or NAME:TYPE=VALUE (TYPE String or Number, with an optional
** .label). Binary would need base64 input; not offered here. */
static int parse_attr(sqs_opts_t* o, const char* arg) {
  char* buf;
  char* eq;
  char* colon;
  if (o->nattrs == MAX_ATTRS) {
    fprintf(stderr, "oncebox sqs: at most %d --attr\n", MAX_ATTRS);
    return -1;
  }
  buf = strdup(arg);
  if (buf == NULL) return -1;
  o->attr_buf[o->nattrs] = buf;
  eq = strchr(buf, '=');
  if (eq == NULL || eq == buf || eq[1] == '\0') {
    fprintf(stderr, "oncebox sqs: --attr wants NAME=VALUE (non-empty)\n");
    o->nattrs++;
    return -1;
  }
  *eq = '\0';
  colon = strchr(buf, ':');
  if (colon != NULL) {
    *colon = '\0';
    if (strncmp(colon + 1, "String", 6) != 0 &&
        strncmp(colon + 1, "Number", 6) != 0) {
      fprintf(stderr,
              "oncebox sqs: --attr type must be String or Number "
              "(NAME:Number=VALUE)\n");
      o->nattrs++;
      return -1;
    }
  }
  o->attrs[o->nattrs].name = buf;
  o->attrs[o->nattrs].data_type = colon ? colon + 1 : "String";
  o->attrs[o->nattrs].value = eq + 1;
  o->attrs[o->nattrs].value_len = strlen(eq + 1);
  o->nattrs++;
  return 0;
}

static int parse_resolve(sqs_opts_t* o, const char* arg) {
  char* buf;
  char* colon;
  if (o->nresolve == MAX_RESOLVE) {
    fprintf(stderr, "oncebox sqs: at most %d --resolve\n", MAX_RESOLVE);
    return -1;
  }
  buf = strdup(arg);
  if (buf == NULL) return -1;
  o->resolve_buf[o->nresolve] = buf;
  o->nresolve++;
  colon = strchr(buf, ':');
  if (colon == NULL || colon == buf || colon[1] == '\0') {
    fprintf(stderr, "oncebox sqs: --resolve wants HOST:ADDR\n");
    return -1;
  }
  *colon = '\0';
  o->resolve[o->nresolve - 1].host = buf;
  o->resolve[o->nresolve - 1].addr = colon + 1;
  return 0;
}

static int parse_int(const char* opt, const char* v, int lo, int hi, int* out) {
  long long n = ob__cli_parse_count(v);
  if (n < lo || n > hi) {
    fprintf(stderr, "oncebox sqs: %s wants an integer from %d to %d\n", opt, lo,
            hi);
    return -1;
  }
  *out = (int)n;
  return 0;
}

/* Returns 0, or EXIT_USAGE after printing why. */
static int parse_args(sqs_opts_t* o, int argc, char** argv) {
  int i;
  memset(o, 0, sizeof *o);
  o->wait = -1;
  o->visibility = -1;
  if (argc < 2) {
    usage(stderr);
    return EXIT_USAGE;
  }
  o->sub = argv[1];
  if (strcmp(o->sub, "send") != 0 && strcmp(o->sub, "receive") != 0 &&
      strcmp(o->sub, "attributes") != 0) {
    fprintf(stderr, "oncebox sqs: unknown subcommand '%s'\n", o->sub);
    usage(stderr);
    return EXIT_USAGE;
  }
  for (i = 2; i < argc; i++) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    int send = strcmp(o->sub, "send") == 0;
    int recv = strcmp(o->sub, "receive") == 0;
#define TAKES(name) (strcmp(a, name) == 0 && v != NULL && (i++, 1))
    if (strcmp(a, "--json") == 0) {
      o->json = 1;
    } else if (strcmp(a, "--sqs-allow-http") == 0) {
      o->allow_http = 1;
    } else if (recv && strcmp(a, "--delete") == 0) {
      o->del = 1;
    } else if (TAKES("--queue-url")) {
      o->queue_url = v;
    } else if (TAKES("--region")) {
      o->ov.region = v;
    } else if (TAKES("--endpoint-url")) {
      o->ov.endpoint = v;
    } else if (TAKES("--profile")) {
      o->ov.profile = v;
    } else if (TAKES("--ca-bundle")) {
      o->ov.ca_file = v;
    } else if (TAKES("--resolve")) {
      if (parse_resolve(o, v) != 0) return EXIT_USAGE;
    } else if (send && TAKES("--body")) {
      o->body = v;
    } else if (send && TAKES("--attr")) {
      if (parse_attr(o, v) != 0) return EXIT_USAGE;
    } else if (send && TAKES("--group-id")) {
      o->group_id = v;
    } else if (send && TAKES("--dedup-id")) {
      o->dedup_id = v;
    } else if (recv && TAKES("--max")) {
      if (parse_int("--max", v, 1, OB__SQS_MAX_RECEIVE, &o->max) != 0)
        return EXIT_USAGE;
    } else if (recv && TAKES("--wait")) {
      if (parse_int("--wait", v, 0, 20, &o->wait) != 0) return EXIT_USAGE;
    } else if (recv && TAKES("--visibility")) {
      if (parse_int("--visibility", v, 0, 43200, &o->visibility) != 0)
        return EXIT_USAGE;
    } else {
      fprintf(stderr, "oncebox sqs %s: unexpected argument '%s'%s\n", o->sub,
              a, v == NULL && a[0] == '-' ? " (missing value?)" : "");
      return EXIT_USAGE;
    }
#undef TAKES
  }
  if (o->queue_url == NULL) {
    fprintf(stderr, "oncebox sqs %s: --queue-url is required\n", o->sub);
    return EXIT_USAGE;
  }
  if (strcmp(o->sub, "send") == 0 && o->body == NULL) {
    fprintf(stderr, "oncebox sqs send: --body is required\n");
    return EXIT_USAGE;
  }
  return 0;
}

/* --body -: the whole of stdin (SQS's limit is 1 MiB). */
static char* read_stdin(size_t* len) {
  size_t cap = 65536, n = 0;
  char* buf = malloc(cap);
  while (buf != NULL) {
    size_t got;
    if (n == cap) {
      char* nb = cap > OB__SQS_MAX_MESSAGE_BYTES ? NULL : realloc(buf, cap * 2);
      if (nb == NULL) {
        free(buf);
        return NULL;
      }
      buf = nb;
      cap *= 2;
    }
    got = fread(buf + n, 1, cap - n, stdin);
    n += got;
    if (got == 0) break;
  }
  *len = n;
  return buf;
}

/* ---------------------------------------------------------------------------
** The loop.
*/
static void on_done(ob__sqs_req_t* req, int status) {
  run_t* r = req->data;
  r->done = 1;
  r->status = status;
}

static void on_closed(ob__sqs_client_t* c, void* arg) {
  (void)c;
  ((run_t*)arg)->closed = 1;
}

static int wait_done(run_t* r) {
  while (!r->done && uv_run(&r->loop, UV_RUN_ONCE) != 0) {
  }
  return r->done ? r->status : OB_ESTATE;
}

static void report(const sqs_opts_t* o, const run_t* r, int status) {
  const ob__sqs_req_t* q = &r->req;
  if (o->json) {
    cJSON* j = cJSON_CreateObject();
    cJSON* e = cJSON_AddObjectToObject(j, "error");
    char* t;
    cJSON_AddStringToObject(e, "status", ob__sqs_err_name(status));
    if (q->error.type[0] || q->error.code[0])
      cJSON_AddStringToObject(e, "code",
                              q->error.type[0] ? q->error.type : q->error.code);
    if (q->error.query_code[0])
      cJSON_AddStringToObject(e, "queryCode", q->error.query_code);
    if (q->error.message[0])
      cJSON_AddStringToObject(e, "message", q->error.message);
    if (q->http_status) cJSON_AddNumberToObject(e, "httpStatus", q->http_status);
    cJSON_AddNumberToObject(e, "attempts", q->attempts);
    cJSON_AddStringToObject(e, "detail", q->detail);
    t = cJSON_PrintUnformatted(j);
    if (t) printf("%s\n", t);
    free(t);
    cJSON_Delete(j);
  }
  fprintf(stderr, "oncebox sqs %s: %s\n", o->sub,
          q->detail[0] ? q->detail : ob__sqs_strerror(status));
  if (q->attempts > 1)
    fprintf(stderr, "oncebox sqs %s: gave up after %d attempts\n", o->sub,
            q->attempts);
}

/* ---------------------------------------------------------------------------
** Subcommands. Each returns an exit code.
*/
static int do_send(const sqs_opts_t* o, run_t* r) {
  ob__sqs_send_t m;
  char* stdin_body = NULL;
  int rc;

  ob__sqs_send_init(&m);
  if (strcmp(o->body, "-") == 0) {
    stdin_body = read_stdin(&m.body_len);
    if (stdin_body == NULL) {
      fprintf(stderr, "oncebox sqs send: cannot read the body from stdin\n");
      return EXIT_FAIL;
    }
    m.body = stdin_body;
  } else {
    m.body = o->body;
    m.body_len = strlen(o->body);
  }
  m.attrs = o->attrs;
  m.nattrs = o->nattrs;
  m.group_id = o->group_id;
  m.dedup_id = o->dedup_id;
  rc = ob__sqs_send_message(r->client, &r->req, o->queue_url, &m, on_done);
  free(stdin_body);
  if (rc < 0) {
    fprintf(stderr, "oncebox sqs send: %s\n",
            r->req.detail[0] ? r->req.detail : ob__sqs_strerror(rc));
    return rc == OB_EINVAL || rc == OB_ETOOBIG ? EXIT_USAGE : EXIT_FAIL;
  }
  rc = wait_done(r);
  if (rc != 0) {
    report(o, r, rc);
    return EXIT_FAIL;
  }
  if (o->json) {
    cJSON* j = cJSON_CreateObject();
    char* t;
    cJSON_AddStringToObject(j, "MessageId", r->req.send.message_id);
    cJSON_AddStringToObject(j, "MD5OfMessageBody", r->req.send.md5_of_body);
    if (r->req.send.md5_of_message_attributes)
      cJSON_AddStringToObject(j, "MD5OfMessageAttributes",
                              r->req.send.md5_of_message_attributes);
    if (r->req.send.sequence_number)
      cJSON_AddStringToObject(j, "SequenceNumber", r->req.send.sequence_number);
    t = cJSON_PrintUnformatted(j);
    if (t) printf("%s\n", t);
    free(t);
    cJSON_Delete(j);
  } else {
    printf("sent %s", r->req.send.message_id);
    if (r->req.send.sequence_number)
      printf(" (sequence %s)", r->req.send.sequence_number);
    printf("\n");
  }
  return EXIT_OK;
}

static cJSON* message_json(const ob__sqs_message_t* m) {
  cJSON* j = cJSON_CreateObject();
  cJSON* a = cJSON_AddObjectToObject(j, "Attributes");
  cJSON* ma = cJSON_AddObjectToObject(j, "MessageAttributes");
  cJSON_AddStringToObject(j, "MessageId", m->message_id);
  cJSON_AddStringToObject(j, "ReceiptHandle", m->receipt_handle);
  cJSON_AddStringToObject(j, "MD5OfBody", m->md5_of_body);
  cJSON_AddStringToObject(j, "Body", m->body);
  for (size_t i = 0; i < m->nattributes; i++)
    cJSON_AddStringToObject(a, m->attributes[i].name, m->attributes[i].value);
  for (size_t i = 0; i < m->nmessage_attributes; i++) {
    const ob__sqs_attr_t* at = &m->message_attributes[i];
    cJSON* v = cJSON_AddObjectToObject(ma, at->name);
    cJSON_AddStringToObject(v, "DataType", at->data_type);
    if (strncmp(at->data_type, "Binary", 6) == 0)
      cJSON_AddNumberToObject(v, "BinaryLength", (double)at->value_len);
    else
      cJSON_AddStringToObject(v, "StringValue", (const char*)at->value);
  }
  return j;
}

static void message_text(const ob__sqs_message_t* m, size_t i, size_t n) {
  printf("message %zu of %zu\n", i + 1, n);
  printf("  id:        %s\n", m->message_id);
  printf("  receives:  %lld\n", (long long)m->receive_count);
  if (m->group_id) printf("  group:     %s\n", m->group_id);
  if (m->dedup_id) printf("  dedup id:  %s\n", m->dedup_id);
  if (m->sequence_number) printf("  sequence:  %s\n", m->sequence_number);
  for (size_t k = 0; k < m->nmessage_attributes; k++) {
    const ob__sqs_attr_t* at = &m->message_attributes[k];
    if (strncmp(at->data_type, "Binary", 6) == 0)
      printf("  attr %s (%s): %zu bytes\n", at->name, at->data_type,
             at->value_len);
    else
      printf("  attr %s (%s): %s\n", at->name, at->data_type,
             (const char*)at->value);
  }
  printf("  body:      %.*s\n", (int)m->body_len, m->body);
}

static int do_receive(const sqs_opts_t* o, run_t* r) {
  static const char* const all[] = {"All"};
  ob__sqs_receive_t p;
  ob__sqs_req_t del;
  ob__sqs_handle_entry_t h[OB__SQS_MAX_RECEIVE];
  char ids[OB__SQS_MAX_RECEIVE][24];
  const ob__sqs_receive_result_t* res = &r->req.receive;
  cJSON* out = NULL;
  size_t deleted = 0;
  int code = EXIT_OK;
  int rc;

  ob__sqs_receive_init(&p);
  p.queue_url = o->queue_url;
  p.max_messages = o->max;
  p.wait_time_seconds = o->wait;
  p.visibility_timeout = o->visibility;
  p.system_attribute_names = all;
  p.nsystem_attribute_names = 1;
  p.message_attribute_names = all;
  p.nmessage_attribute_names = 1;
  rc = ob__sqs_receive_message(r->client, &r->req, &p, on_done);
  if (rc < 0) {
    fprintf(stderr, "oncebox sqs receive: %s\n",
            r->req.detail[0] ? r->req.detail : ob__sqs_strerror(rc));
    return EXIT_USAGE;
  }
  rc = wait_done(r);
  if (rc != 0) {
    report(o, r, rc);
    return EXIT_FAIL;
  }
  if (o->json) {
    cJSON* arr;
    out = cJSON_CreateObject();
    arr = cJSON_AddArrayToObject(out, "Messages");
    for (size_t i = 0; i < res->n; i++)
      cJSON_AddItemToArray(arr, message_json(&res->messages[i]));
  } else if (res->n == 0) {
    printf("no messages\n");
  } else {
    for (size_t i = 0; i < res->n; i++) message_text(&res->messages[i], i, res->n);
  }

  if (o->del && res->n > 0) {
    memset(&del, 0, sizeof del);
    for (size_t i = 0; i < res->n; i++) {
      snprintf(ids[i], sizeof ids[i], "m%zu", i);
      h[i].id = ids[i];
      h[i].receipt_handle = res->messages[i].receipt_handle;
      h[i].visibility_timeout = -1;
    }
    del.data = r;
    r->done = 0;
    rc = ob__sqs_delete_message_batch(r->client, &del, o->queue_url, h, res->n,
                                     on_done);
    if (rc == 0) rc = wait_done(r);
    if (rc != 0) {
      fprintf(stderr, "oncebox sqs receive: delete failed: %s\n",
              del.detail[0] ? del.detail : ob__sqs_strerror(rc));
      code = EXIT_FAIL;
    } else {
      deleted = del.batch.nok;
      for (size_t i = 0; i < del.batch.nfailed; i++)
        fprintf(stderr, "oncebox sqs receive: delete %s failed: %s: %s\n",
                del.batch.failed[i].id, del.batch.failed[i].code,
                del.batch.failed[i].message);
      if (del.batch.nfailed > 0) code = EXIT_FAIL;
      if (!o->json) printf("deleted %zu\n", deleted);
    }
    ob__sqs_req_cleanup(&del);
  }
  if (out != NULL) {
    char* t;
    if (o->del) cJSON_AddNumberToObject(out, "Deleted", (double)deleted);
    t = cJSON_PrintUnformatted(out);
    if (t) printf("%s\n", t);
    free(t);
    cJSON_Delete(out);
  }
  return code;
}

static int cmp_kv(const void* a, const void* b) {
  return strcmp(((const ob__sqs_kv_t*)a)->name, ((const ob__sqs_kv_t*)b)->name);
}

static int do_attributes(const sqs_opts_t* o, run_t* r) {
  static const char* const all[] = {"All"};
  ob__sqs_attrs_result_t* a = &r->req.attrs;
  int rc = ob__sqs_get_queue_attributes(r->client, &r->req, o->queue_url, all,
                                       1, on_done);
  if (rc < 0) {
    fprintf(stderr, "oncebox sqs attributes: %s\n",
            r->req.detail[0] ? r->req.detail : ob__sqs_strerror(rc));
    return EXIT_USAGE;
  }
  rc = wait_done(r);
  if (rc != 0) {
    report(o, r, rc);
    return EXIT_FAIL;
  }
  qsort(a->attrs, a->n, sizeof *a->attrs, cmp_kv);
  if (o->json) {
    cJSON* j = cJSON_CreateObject();
    cJSON* at = cJSON_AddObjectToObject(j, "Attributes");
    char* t;
    for (size_t i = 0; i < a->n; i++)
      cJSON_AddStringToObject(at, a->attrs[i].name, a->attrs[i].value);
    t = cJSON_PrintUnformatted(j);
    if (t) printf("%s\n", t);
    free(t);
    cJSON_Delete(j);
  } else {
    for (size_t i = 0; i < a->n; i++)
      printf("%-40s %s\n", a->attrs[i].name, a->attrs[i].value);
  }
  return EXIT_OK;
}

int ob__cmd_sqs(cli_t* cli, int argc, char** argv) {
  sqs_opts_t o;
  ob__aws_config_t aws;
  ob__sqs_client_config_t cc;
  run_t r;
  char err[1024];
  char warn[1024];
  int code;
  int rc;

  memset(&aws, 0, sizeof aws);
  if (ob__cli_wants_help(argc, argv)) {
    usage(stdout);
    return EXIT_OK;
  }
  code = parse_args(&o, argc, argv);
  if (code != 0) goto out_opts;
  rc = ob__aws_config_load(&aws, NULL, NULL, &o.ov, err, sizeof err);
  if (rc < 0) {
    fprintf(stderr, "oncebox sqs %s: configuration: %s\n", o.sub, err);
    code = EXIT_FAIL;
    goto out_opts;
  }
  /* http:// only with the opt-in (docs/security.md, "Plain HTTP"): like
  ** the provider's --provider-allow-http, a missing opt-in is a usage
  ** error. */
  rc = ob__aws_plain_http_check(&aws, o.allow_http, warn, sizeof warn, err,
                                sizeof err);
  if (rc < 0) {
    fprintf(stderr, "oncebox sqs %s: %s\n", o.sub, err);
    ob__aws_config_free(&aws);
    code = EXIT_USAGE;
    goto out_opts;
  }
  if (rc == 1 && cli->log_level >= OB_LOG_WARN) {
    char line[1100];
    snprintf(line, sizeof line, "sqs: %s", warn);
    ob__cli_log(NULL, OB_LOG_WARN, line);
  }
  memset(&r, 0, sizeof r);
  uv_loop_init(&r.loop);
  r.req.data = &r;
  ob__sqs_client_config_init(&cc);
  ob__sqs_client_config_from_aws(&cc, &aws);
  cc.resolve = o.resolve;
  cc.nresolve = o.nresolve;
  rc = ob__sqs_client_open(&r.client, &r.loop, &cc, err, sizeof err);
  ob__aws_config_free(&aws);   /* the client keeps its own copy */
  if (rc < 0) {
    fprintf(stderr, "oncebox sqs %s: %s: %s\n", o.sub, ob__sqs_strerror(rc), err);
    code = EXIT_FAIL;
    goto out_loop;
  }
  if (strcmp(o.sub, "send") == 0) code = do_send(&o, &r);
  else if (strcmp(o.sub, "receive") == 0) code = do_receive(&o, &r);
  else code = do_attributes(&o, &r);
  if (cli->log_level >= OB_LOG_DEBUG) {
    /* Which TLS the endpoint spoke (issue 42): "" over http or before any
    ** connection. */
    ob__sqs_stats_t st;
    ob__sqs_client_stats(r.client, &st);
    if (st.tls_version[0] != '\0') {
      char line[160];
      snprintf(line, sizeof line, "sqs: connected over %s, %s", st.tls_version,
               st.tls_suite);
      ob__cli_log(NULL, OB_LOG_DEBUG, line);
    }
  }
  ob__sqs_req_cleanup(&r.req);
  ob__sqs_client_close(r.client, on_closed, &r);
  while (!r.closed && uv_run(&r.loop, UV_RUN_ONCE) != 0) {
  }
out_loop:
  uv_run(&r.loop, UV_RUN_DEFAULT);
  uv_loop_close(&r.loop);
out_opts:
  opts_free(&o);
  return code;
}
