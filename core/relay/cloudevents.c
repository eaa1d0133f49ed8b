#include "core/relay/cloudevents.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util/errbuf.h"
#include "core/util/json_check.h"
#include "core/util/uuid.h"

/* Worst case of one escaped byte is \u00XX: 6 bytes. */
static size_t put_str(char* out, const char* s) {
  static const char hex[] = "0123456789abcdef";
  size_t n = 0;
  out[n++] = '"';
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      out[n++] = '\\';
      out[n++] = (char)c;
    } else if (c < 0x20) {
      memcpy(out + n, "\\u00", 4);
      out[n + 4] = hex[c >> 4];
      out[n + 5] = hex[c & 15];
      n += 6;
    } else {
      out[n++] = (char)c;
    }
  }
  out[n++] = '"';
  return n;
}

static size_t put_raw(char* out, const char* s) {
  size_t n = strlen(s);
  memcpy(out, s, n);
  return n;
}

char* ob__cloudevent_encode(const ob_event_t* ev, const char* source,
                            size_t* len) {
  char when[40];
  struct tm tm;
  time_t secs = (time_t)(ev->created_at_ms / 1000);
  size_t cap, n = 0;
  char* out;

  gmtime_r(&secs, &tm);
  {
    size_t k = strftime(when, sizeof when - 6, "%Y-%m-%dT%H:%M:%S", &tm);
    int ms = (int)(ev->created_at_ms % 1000);
    if (ms < 0) ms = 0;
    when[k++] = '.';
    when[k++] = (char)('0' + ms / 100);
    when[k++] = (char)('0' + ms / 10 % 10);
    when[k++] = (char)('0' + ms % 10);
    when[k++] = 'Z';
    when[k] = '\0';
  }
  cap = 160 + 6 * (strlen(ev->id) + strlen(source) + strlen(ev->event_type) +
                   strlen(ev->aggregate_id)) +
        strlen(when) + ev->payload_len;
  out = malloc(cap);
  if (out == NULL) return NULL;
  n += put_raw(out + n, "{\"specversion\":\"1.0\",\"id\":");
  n += put_str(out + n, ev->id);
  n += put_raw(out + n, ",\"source\":");
  n += put_str(out + n, source);
  n += put_raw(out + n, ",\"type\":");
  n += put_str(out + n, ev->event_type);
  n += put_raw(out + n, ",\"subject\":");
  n += put_str(out + n, ev->aggregate_id);
  n += put_raw(out + n, ",\"time\":");
  n += put_str(out + n, when);
  n += put_raw(out + n, ",\"datacontenttype\":\"application/json\",\"data\":");
  memcpy(out + n, ev->payload, ev->payload_len);
  n += ev->payload_len;
  out[n++] = '}';
  out[n] = '\0';
  if (len) *len = n;
  return out;
}

enum { M_SPEC, M_ID, M_SOURCE, M_TYPE, M_DATA, M_DATA_B64, M_CT, M_COUNT };
static const char* const members[M_COUNT] = {
    "specversion", "id", "source", "type", "data", "data_base64",
    "datacontenttype"};

/* A JSON string member decoded into buf; -1 if absent or not a string. */
static int get_str(const char* v, char* buf, size_t cap, size_t* n) {
  if (v == NULL || *v != '"') return -1;
  *n = ob__json_str_decode(v, buf, cap);
  return *n >= cap ? -2 : 0;
}

int ob__cloudevent_decode(const char* body, size_t len, ob__cloudevent_t* out,
                          char* reason, size_t reason_len) {
  const char* val[M_COUNT] = {NULL};
  char buf[256];
  size_t n;
  int dup;

  memset(out, 0, sizeof *out);
  if (!ob__json_valid(body, len))
    return ob__errbuf_set(reason, reason_len, -1, "body is not valid JSON");
  if (!ob__json_is_object(body, len))
    return ob__errbuf_set(reason, reason_len, -1, "body is not a JSON object");
  if ((dup = ob__json_members(body, len, members, M_COUNT, val, NULL)) >= 0)
    return ob__errbuf_set(reason, reason_len, -1,
                          "duplicate CloudEvents attribute %s", members[dup]);
  if (get_str(val[M_SPEC], buf, sizeof buf, &n) != 0 || strcmp(buf, "1.0") != 0)
    return ob__errbuf_set(reason, reason_len, -1,
                          "specversion must be \"1.0\"");
  if (get_str(val[M_ID], buf, sizeof buf, &n) != 0 ||
      ob__uuid_normalize(buf, out->id) != 0)
    return ob__errbuf_set(reason, reason_len, -1,
                          "id must be a UUID (the event's stable id)");
  if (get_str(val[M_SOURCE], buf, sizeof buf, &n) != 0 || n == 0)
    return ob__errbuf_set(reason, reason_len, -1,
                          "source must be a non-empty string");
  if (get_str(val[M_TYPE], out->type, sizeof out->type, &n) != 0 || n == 0)
    return ob__errbuf_set(reason, reason_len, -1,
                          "type must be 1..128 characters");
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)out->type[i] < 0x21 || (unsigned char)out->type[i] > 0x7e)
      return ob__errbuf_set(reason, reason_len, -1,
                            "type must be printable ASCII");
  if (val[M_CT] != NULL) {
    if (get_str(val[M_CT], buf, sizeof buf, &n) != 0 ||
        (strncmp(buf, "application/json", 16) != 0 &&
         strstr(buf, "+json") == NULL))
      return ob__errbuf_set(reason, reason_len, -1,
                            "datacontenttype must be JSON");
  }
  if (val[M_DATA_B64] != NULL)
    return ob__errbuf_set(reason, reason_len, -1,
                          "data_base64 is not supported");
  if (val[M_DATA] == NULL)
    return ob__errbuf_set(reason, reason_len, -1, "missing data");
  /* The raw span of the data value, without the whitespace after it. */
  n = ob__json_scan(val[M_DATA], len - (size_t)(val[M_DATA] - body));
  while (n > 0 && (val[M_DATA][n - 1] == ' ' || val[M_DATA][n - 1] == '\t' ||
                   val[M_DATA][n - 1] == '\n' || val[M_DATA][n - 1] == '\r'))
    n--;
  out->data = val[M_DATA];
  out->data_len = n;
  return 0;
}
