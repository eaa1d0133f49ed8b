/* SPDX-License-Identifier: Apache-2.0 */
/*
** Amazon SQS over the AWS JSON 1.0 protocol (awsJson1_0, query-compatible):
** request bodies, response parsing, error parsing, MD5 checks.
**
** Internal to oncebox (prefix ob__): not API. Pure: no I/O, no clock. The
** HTTP layer sends
**     POST / HTTP/1.1
**     Host: sqs.<region>.amazonaws.com
**     Content-Type: application/x-amz-json-1.0      (OB__SQS_CONTENT_TYPE)
**     X-Amz-Target: ob__sqs_target(op)
** with the body built here, signs it with core/sigv4 (service "sqs"), and
** hands the response status, body and the x-amzn-query-error header back.
** Wire facts: docs/sqs-protocol.md.
**
** Building: request bodies are written by a small streaming JSON writer, not
** through a cJSON tree: a batch of ten 1 MiB bodies would otherwise exist
** three times (caller, tree, printed text). Every string is checked to be
** valid UTF-8 and message text against SQS's allowed characters before a
** byte is written, so what we send is always valid JSON SQS accepts.
** Parsing: cJSON, after a size cap and a nesting-depth pre-scan.
**
** Errors: 0 or a negative OB_E* code; when `diag` is not NULL it receives
** the specific reason and the JSON member involved:
**   OB_EINVAL   invalid input, or a malformed/incomplete response
**   OB_ETOOBIG  a size or count limit (message 1 MiB, batch 10 entries and
**               1 MiB, response and depth caps)
**   OB_EIO      an MD5 checksum in a response does not match
**   OB_ENOMEM   allocation failed
*/
#ifndef OB_CORE_SQS_H
#define OB_CORE_SQS_H

#include <stddef.h>
#include <stdint.h>

#define OB__SQS_CONTENT_TYPE "application/x-amz-json-1.0"

/* Limits from the service model (docs/sqs-protocol.md, "Limits"). */
#define OB__SQS_MAX_MESSAGE_BYTES 1048576   /* body + attribute names/types/values */
#define OB__SQS_MAX_BATCH_BYTES 1048576     /* sum over the entries */
#define OB__SQS_MAX_BATCH_ENTRIES 10
#define OB__SQS_MAX_ATTRIBUTES 10
#define OB__SQS_MAX_RECEIVE 10

/* Caps applied to responses before/while parsing. A full ReceiveMessage is
** at most 10 x 1 MiB of bodies, at most doubled by JSON escaping, plus
** attributes; 24 MiB leaves room and still bounds memory. Real responses
** nest 5 deep. */
#define OB__SQS_MAX_RESPONSE_BYTES (24u * 1024u * 1024u)
#define OB__SQS_MAX_JSON_DEPTH 16
#define OB__SQS_MAX_FIELD_BYTES 8192        /* ids, handles, codes, MD5s... */

typedef enum {
  OB__SQS_SEND_MESSAGE = 0,
  OB__SQS_SEND_MESSAGE_BATCH,
  OB__SQS_RECEIVE_MESSAGE,
  OB__SQS_DELETE_MESSAGE,
  OB__SQS_DELETE_MESSAGE_BATCH,
  OB__SQS_CHANGE_MESSAGE_VISIBILITY,
  OB__SQS_CHANGE_MESSAGE_VISIBILITY_BATCH,
  OB__SQS_GET_QUEUE_URL,
  OB__SQS_GET_QUEUE_ATTRIBUTES,
  OB__SQS_OP_COUNT
} ob__sqs_op_t;

/* "AmazonSQS.SendMessage" etc., the X-Amz-Target value; NULL for an
** unknown op. Static storage. This function can't fail. */
const char* ob__sqs_target(ob__sqs_op_t op);

/* ---------------------------------------------------------------------------
** Diagnostics.
*/
typedef enum {
  OB__SQS_FAULT_NONE = 0,
  OB__SQS_FAULT_ARG,          /* a required argument is NULL/empty/out of range */
  OB__SQS_FAULT_TEXT,         /* not UTF-8, or a character SQS refuses */
  OB__SQS_FAULT_NAME,         /* invalid attribute name / batch id / data type */
  OB__SQS_FAULT_DUPLICATE,    /* repeated attribute name or batch entry Id */
  OB__SQS_FAULT_TOO_BIG,      /* message, batch or response over its limit */
  OB__SQS_FAULT_TOO_MANY,     /* too many entries, attributes or messages */
  OB__SQS_FAULT_BAD_JSON,     /* not JSON, or not a JSON object */
  OB__SQS_FAULT_TOO_DEEP,     /* nesting beyond OB__SQS_MAX_JSON_DEPTH */
  OB__SQS_FAULT_WRONG_TYPE,   /* a member has the wrong JSON type */
  OB__SQS_FAULT_MISSING,      /* a required member is absent */
  OB__SQS_FAULT_BAD_VALUE,    /* impossible value: bad base64, unknown Id, ... */
  OB__SQS_FAULT_MD5           /* checksum mismatch */
} ob__sqs_fault_t;

typedef struct ob__sqs_diag_s {
  ob__sqs_fault_t fault;
  char field[64];   /* JSON member or argument, e.g. "Messages[3].MD5OfBody" */
} ob__sqs_diag_t;

/* Static name of a fault ("MD5", "TOO_DEEP", ...). This function can't fail. */
const char* ob__sqs_fault_name(ob__sqs_fault_t f);

/* ---------------------------------------------------------------------------
** Requests. Every builder writes a complete JSON object into a malloc'd,
** NUL-terminated string: *out (release with free()) and its length in
** *out_len (may be NULL). On error *out is NULL.
*/

/* A message attribute. data_type is "String", "Number" or "Binary",
** optionally followed by ".label". For String and Number, value is UTF-8
** text; for Binary, raw bytes (base64 on the wire). Values must not be
** empty (SQS refuses empty attribute values). */
typedef struct ob__sqs_attr_s {
  const char* name;
  const char* data_type;
  const void* value;
  size_t value_len;
} ob__sqs_attr_t;

/* One message to send. Strings are NUL-terminated unless a length says
** otherwise; NULL means "omit". */
typedef struct ob__sqs_send_s {
  const char* id;            /* batch entry Id ([A-Za-z0-9_-]{1,80}); ignored
                             ** by SendMessage */
  const char* body;          /* required, 1 byte .. 1 MiB, need not be NUL-ended */
  size_t body_len;
  int delay_seconds;         /* -1: omit; 0..900 (not allowed on FIFO queues) */
  const ob__sqs_attr_t* attrs;
  size_t nattrs;             /* <= 10 */
  const char* trace_header;  /* MessageSystemAttributes.AWSTraceHeader */
  const char* dedup_id;      /* MessageDeduplicationId (FIFO), <= 128 chars */
  const char* group_id;      /* MessageGroupId (FIFO, fair queues), <= 128 */
} ob__sqs_send_t;

/* Fill m with "omit everything" (delay_seconds -1). Can't fail. */
void ob__sqs_send_init(ob__sqs_send_t* m);

/* Size SQS counts against the 1 MiB limit: body + every attribute's name,
** data type and value (raw bytes for Binary). */
size_t ob__sqs_message_size(const ob__sqs_send_t* m);

/* Longest queue URL oncebox accepts (SQS's own are about 80 bytes). */
#define OB__SQS_QUEUE_URL_MAX 2048

/* NULL if url can name a queue to the relay or the consumer, else why not,
** as a static phrase to follow "queue URL ": http(s)://, a host, at most
** OB__SQS_QUEUE_URL_MAX printable ASCII bytes without spaces, no user
** information (it would reach the logs). */
const char* ob__sqs_queue_url_problem(const char* url);

int ob__sqs_build_send_message(const char* queue_url, const ob__sqs_send_t* m,
                               char** out, size_t* out_len,
                               ob__sqs_diag_t* diag);

/* 1..10 entries with distinct Ids, total size <= 1 MiB. */
int ob__sqs_build_send_message_batch(const char* queue_url,
                                     const ob__sqs_send_t* entries, size_t n,
                                     char** out, size_t* out_len,
                                     ob__sqs_diag_t* diag);

typedef struct ob__sqs_receive_s {
  const char* queue_url;
  const char* const* system_attribute_names;   /* MessageSystemAttributeNames */
  size_t nsystem_attribute_names;
  const char* const* message_attribute_names;  /* "All", ".*", "prefix.*", names */
  size_t nmessage_attribute_names;
  int max_messages;          /* 0: omit (SQS default 1); 1..10 */
  int visibility_timeout;    /* -1: omit; 0..43200 */
  int wait_time_seconds;     /* -1: omit; 0..20 (HTTP timeout must be longer) */
  const char* receive_request_attempt_id;  /* FIFO; NULL: omit */
} ob__sqs_receive_t;

/* Everything omitted (max_messages 0, timeouts -1). Can't fail. */
void ob__sqs_receive_init(ob__sqs_receive_t* r);

int ob__sqs_build_receive_message(const ob__sqs_receive_t* r, char** out,
                                  size_t* out_len, ob__sqs_diag_t* diag);

int ob__sqs_build_delete_message(const char* queue_url,
                                 const char* receipt_handle, char** out,
                                 size_t* out_len, ob__sqs_diag_t* diag);

/* A DeleteMessageBatch / ChangeMessageVisibilityBatch entry. */
typedef struct ob__sqs_handle_entry_s {
  const char* id;              /* [A-Za-z0-9_-]{1,80}, distinct */
  const char* receipt_handle;
  int visibility_timeout;      /* CMV batch: -1 omit, 0..43200; else ignored */
} ob__sqs_handle_entry_t;

int ob__sqs_build_delete_message_batch(const char* queue_url,
                                       const ob__sqs_handle_entry_t* entries,
                                       size_t n, char** out, size_t* out_len,
                                       ob__sqs_diag_t* diag);

/* visibility_timeout 0..43200 (counted from the original receive, SQS does
** not clamp). */
int ob__sqs_build_change_visibility(const char* queue_url,
                                    const char* receipt_handle,
                                    int visibility_timeout, char** out,
                                    size_t* out_len, ob__sqs_diag_t* diag);

int ob__sqs_build_change_visibility_batch(
    const char* queue_url, const ob__sqs_handle_entry_t* entries, size_t n,
    char** out, size_t* out_len, ob__sqs_diag_t* diag);

/* owner_account_id may be NULL. */
int ob__sqs_build_get_queue_url(const char* queue_name,
                                const char* owner_account_id, char** out,
                                size_t* out_len, ob__sqs_diag_t* diag);

/* names may be NULL/0 (SQS then returns no attributes). */
int ob__sqs_build_get_queue_attributes(const char* queue_url,
                                       const char* const* names, size_t n,
                                       char** out, size_t* out_len,
                                       ob__sqs_diag_t* diag);

/* ---------------------------------------------------------------------------
** Responses (HTTP 2xx). Each parser takes the body bytes (need not be
** NUL-terminated). Results point into memory owned by the result object;
** release it with the matching _free (NULL-safe, idempotent). On error the
** result is zeroed and owns nothing.
*/

/* A name/value pair of strings (system or queue attributes). */
typedef struct ob__sqs_kv_s {
  const char* name;
  const char* value;
} ob__sqs_kv_t;

typedef struct ob__sqs_message_s {
  const char* message_id;
  const char* receipt_handle;
  const char* md5_of_body;
  const char* body;
  size_t body_len;
  const char* md5_of_message_attributes;  /* NULL if absent */
  ob__sqs_kv_t* attributes;               /* system attributes, as sent */
  size_t nattributes;
  ob__sqs_attr_t* message_attributes;     /* value decoded: Binary is raw
                                          ** bytes, text is NUL-ended too */
  size_t nmessage_attributes;
  /* Parsed from `attributes` (SQS sends them as strings): */
  int64_t receive_count;                  /* ApproximateReceiveCount; 0 if absent */
  int64_t sent_timestamp_ms;              /* SentTimestamp; -1 if absent */
  int64_t first_receive_timestamp_ms;     /* ApproximateFirstReceiveTimestamp; -1 */
  const char* group_id;                   /* MessageGroupId; NULL if absent */
  const char* dedup_id;                   /* MessageDeduplicationId */
  const char* sequence_number;            /* SequenceNumber */
} ob__sqs_message_t;

/*
** The JSON object a received message's handler and the failure store see
** as its headers: "sqsMessageId", "sqsAttributes" (the system attributes
** as received) and "sqsMessageAttributes" (name -> {"DataType",
** "StringValue" | "BinaryValue" in base64}, as ReceiveMessage gives them,
** so they can be sent again unchanged). Rendered at receive time, when the
** response is at hand; the consumer puts the CloudEvent's members
** (datacontenttype, trace context) in front once it has decoded the body.
** *out is malloc'd, NUL-terminated. Returns 0, OB_ENOMEM, or OB_EINVAL
** when a value is not UTF-8 (*out NULL).
*/
int ob__sqs_headers_json(const ob__sqs_message_t* m, char** out);

typedef struct ob__sqs_receive_result_s {
  ob__sqs_message_t* messages;   /* 0..10; an empty queue gives {} */
  size_t n;
  void* priv_;
} ob__sqs_receive_result_t;

/* Check each MD5OfBody (always) and, with OB__SQS_VERIFY_ATTR_MD5, each
** MD5OfMessageAttributes against the attributes received (use it when
** receiving with "All": what SQS hashes is the whole attribute set). A
** mismatch fails the whole call with OB_EIO, like the AWS SDKs. */
#define OB__SQS_VERIFY_ATTR_MD5 1

int ob__sqs_parse_receive_message(const char* body, size_t len, int flags,
                                  ob__sqs_receive_result_t* out,
                                  ob__sqs_diag_t* diag);
void ob__sqs_receive_result_free(ob__sqs_receive_result_t* r);

typedef struct ob__sqs_send_result_s {
  const char* message_id;
  const char* md5_of_body;
  const char* md5_of_message_attributes;         /* NULL if absent */
  const char* md5_of_message_system_attributes;  /* NULL if absent */
  const char* sequence_number;                   /* FIFO only, else NULL */
  void* priv_;
} ob__sqs_send_result_t;

/* sent (may be NULL to skip the checks) is the message that was sent:
** MD5OfMessageBody must match its body, and when it had attributes
** MD5OfMessageAttributes must be present and match. */
int ob__sqs_parse_send_message(const char* body, size_t len,
                               const ob__sqs_send_t* sent,
                               ob__sqs_send_result_t* out,
                               ob__sqs_diag_t* diag);
void ob__sqs_send_result_free(ob__sqs_send_result_t* r);

/* Batch results: HTTP 200 even when entries failed, so always walk both. */
typedef struct ob__sqs_batch_ok_s {
  const char* id;
  const char* message_id;          /* SendMessageBatch only, else NULL */
  const char* md5_of_body;         /* SendMessageBatch only */
  const char* md5_of_message_attributes;
  const char* sequence_number;     /* FIFO SendMessageBatch */
} ob__sqs_batch_ok_t;

typedef struct ob__sqs_batch_err_s {
  const char* id;
  int sender_fault;    /* 1: permanent, the request was wrong; 0: server
                       ** side, the entry may be resent */
  const char* code;    /* e.g. "InvalidParameterValue" */
  const char* message; /* "" if absent */
} ob__sqs_batch_err_t;

typedef struct ob__sqs_batch_result_s {
  ob__sqs_batch_ok_t* ok;
  size_t nok;
  ob__sqs_batch_err_t* failed;
  size_t nfailed;
  void* priv_;
} ob__sqs_batch_result_t;

/*
** Parse a SendMessageBatch, DeleteMessageBatch or
** ChangeMessageVisibilityBatch response (op says which). The request's
** entry Ids are `ids` (n_ids of them) or, for SendMessageBatch with `sent`
** (n_ids entries), sent[i].id; ids and sent may both be NULL to skip the
** checks. With Ids known, every result Id must be one of them and appear
** once, and every requested Id must be answered (OB_EINVAL with
** FAULT_BAD_VALUE / FAULT_DUPLICATE / FAULT_MISSING). With `sent`, every
** Successful entry's MD5s are checked against the sent entry as for
** SendMessage (OB_EIO, FAULT_MD5).
*/
int ob__sqs_parse_batch(ob__sqs_op_t op, const char* body, size_t len,
                        const ob__sqs_send_t* sent,
                        const char* const* ids, size_t n_ids,
                        ob__sqs_batch_result_t* out, ob__sqs_diag_t* diag);
void ob__sqs_batch_result_free(ob__sqs_batch_result_t* r);

/* DeleteMessage / ChangeMessageVisibility: an empty body, whitespace or a
** JSON object (members ignored). */
int ob__sqs_parse_empty(const char* body, size_t len, ob__sqs_diag_t* diag);

/* GetQueueUrl: *url_out is a malloc'd copy of QueueUrl (free()). */
int ob__sqs_parse_get_queue_url(const char* body, size_t len, char** url_out,
                                ob__sqs_diag_t* diag);

typedef struct ob__sqs_attrs_result_s {
  ob__sqs_kv_t* attrs;   /* "VisibilityTimeout" -> "30", ... */
  size_t n;
  void* priv_;
} ob__sqs_attrs_result_t;

/* GetQueueAttributes; a missing Attributes member gives n == 0. */
int ob__sqs_parse_get_queue_attributes(const char* body, size_t len,
                                       ob__sqs_attrs_result_t* out,
                                       ob__sqs_diag_t* diag);
void ob__sqs_attrs_result_free(ob__sqs_attrs_result_t* r);
/* Value of one attribute or NULL. */
const char* ob__sqs_attr_get(const ob__sqs_attrs_result_t* r, const char* name);

/* ---------------------------------------------------------------------------
** Error responses (HTTP >= 300).
*/
/* What an answer's body is, as far as the error parser could tell. */
typedef enum {
  OB__SQS_BODY_EMPTY = 0,   /* nothing, or only whitespace */
  OB__SQS_BODY_JSON,        /* one JSON object (what SQS sends) */
  OB__SQS_BODY_XML,         /* starts with '<', not HTML: a query-protocol
                            ** <ErrorResponse>, an S3-style <Error> */
  OB__SQS_BODY_HTML,        /* an HTML page (<!DOCTYPE html>, <html>) */
  OB__SQS_BODY_OTHER        /* text, JSON that is not an object, bytes */
} ob__sqs_body_t;

typedef struct ob__sqs_error_s {
  int http_status;
  ob__sqs_body_t body;   /* what the body was */
  /* The code to act on: the x-amzn-query-error code if that header came
  ** (what query-compatible SDKs prefer, e.g.
  ** "AWS.SimpleQueueService.NonExistentQueue"), else the sanitised body
  ** type ("QueueDoesNotExist"), else x-amzn-errortype; "" if none. */
  char code[128];
  char type[128];        /* body __type/code/Code, sanitised: text after the
                         ** last '#', cut at ':' and ','; "" if none */
  char query_code[128];  /* x-amzn-query-error part 1; "" if none */
  int sender_fault;      /* x-amzn-query-error part 2: 1 Sender, 0 Receiver,
                         ** -1 not given */
  char message[512];     /* message/Message, truncated; "" if none */
} ob__sqs_error_t;

/*
** Fill *out from an error response. body may be anything (a proxy's HTML,
** fauxqs's Fastify 500 JSON): whatever can be read is read, the rest stays
** "". A query-protocol XML body (<ErrorResponse><Error><Type>Sender</Type>
** <Code>..</Code><Message>..</Message>) gives type, message and
** sender_fault from those elements. query_error is the x-amzn-query-error
** header value and errortype the x-amzn-errortype header value (either may
** be NULL). Returns 0, or OB_EINVAL for a NULL out. Strings longer than the
** fields are truncated. Also usable on a 2xx answer, for out->body.
*/
int ob__sqs_parse_error(int http_status, const char* body, size_t len,
                        const char* query_error, const char* errortype,
                        ob__sqs_error_t* out);

/* 1 if the error's code, type or query code (with any "AWS.SimpleQueueService."
** prefix removed) equals name, else 0. */
int ob__sqs_error_is(const ob__sqs_error_t* e, const char* name);

/*
** 1 when an answer to a JSON-protocol request (X-Amz-Target `target`, to
** `endpoint`) says the server is not the SQS JSON API at all, so that the
** same answer comes back for every request until a person fixes the
** endpoint; 0 otherwise (a genuine SQS error, an outage). e is the answer
** parsed by ob__sqs_parse_error (a 2xx too), content_type its Content-Type
** header (may be NULL), endpoint may be NULL. On 1, buf (cap > 0) holds a
** sentence for a log line and `oncebox stats`, the server's own message
** appended (cleaned):
**   415, 405, 501                "the server does not speak SQS's JSON
**                                protocol (HTTP 415 to AmazonSQS.X)"
**   an XML body (not 502..504)   "...: it answered in XML, as servers of
**                                SQS's older query protocol do (HTTP 400
**                                MissingAction to AmazonSQS.X)"
**   UnknownOperationException, UnknownOperation, InvalidAction, or a
**   message "unknown operation" / "unknown action" (not 502..504)
**                                "the server does not know the operation
**                                AmazonSQS.X (HTTP 404 UnknownOperationException)"
**   MissingAction                "the server found no operation in the
**                                request for AmazonSQS.X (HTTP 400 ...)"
**   404 without one of SQS's own 404 codes (ReceiptHandleIsInvalid,
**   InvalidAddress, ResourceNotFoundException, QueueDoesNotExist)
**                                "the server has no SQS API at the
**                                endpoint's path / (HTTP 404 to AmazonSQS.X, ...)"
**   a 2xx whose body is not a JSON object, or a 4xx (but 408, 413, 414,
**   429, 431) with no error code whose body is not JSON
**                                "the server's answer is not SQS's JSON
**                                (HTTP 200, text/html, to AmazonSQS.X): ..."
** Everything else, 502/503/504 and every SQS error code among them (a
** sender fault such as InvalidParameterValue, throttling, credentials),
** is 0. This function can't fail.
*/
int ob__sqs_not_json_api(const ob__sqs_error_t* e, const char* content_type,
                         const char* target, const char* endpoint, char* buf,
                         size_t cap);

/* ---------------------------------------------------------------------------
** MD5 (docs/sqs-protocol.md, "Checksums").
*/

/* The buffer of a lowercase hex MD5: 32 digits and the NUL. */
#define OB__SQS_MD5_BUFLEN 33

/* Lowercase hex MD5 of data. Returns 0, OB_EIO if mbedTLS fails. */
int ob__sqs_md5_hex(const void* data, size_t len,
                    char out[OB__SQS_MD5_BUFLEN]);

/* MD5OfMessageAttributes: attributes sorted by name, each encoded as
** u32be(len(name)) name u32be(len(type)) type, then 1 u32be(len) value for
** String/Number or 2 u32be(len) bytes for Binary. n == 0 gives "".
** Returns 0, OB_EINVAL for an unknown data type, OB_ENOMEM, OB_EIO. */
int ob__sqs_md5_of_attributes(const ob__sqs_attr_t* attrs, size_t n,
                              char out[OB__SQS_MD5_BUFLEN]);

#endif
