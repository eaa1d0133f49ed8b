/* SPDX-License-Identifier: Apache-2.0 */
/* The disk-full policy (docs/field.md, "A disk that fills while offline"):
** where, below the database's size cap, new messages stop, critical ones
** stop, and handling pauses. Pure arithmetic, unit-tested. */
#ifndef OB_CORE_UTIL_SPACE_POLICY_H
#define OB_CORE_UTIL_SPACE_POLICY_H

#include <stdint.h>

/* From the least to the most constrained. */
typedef enum {
  OB__SPACE_OK = 0,        /* everything is accepted */
  OB__SPACE_CRITICAL = 1,  /* in the reserve: only critical types enter */
  OB__SPACE_REFUSING = 2,  /* past half the reserve: no new message enters */
  OB__SPACE_PAUSED = 3     /* the last quarter: handling pauses too, so
                           ** publish marks and reclaiming keep room */
} ob__space_level_t;

#define OB__RESERVE_MIN (64 * 1024)
#define OB__RESERVE_MAX (64LL * 1024 * 1024)

/* The reserve in force for cap and the asked value (OB_RESERVE_AUTO: an
** eighth of the cap within [OB__RESERVE_MIN, OB__RESERVE_MAX], never more
** than half the cap). 0 when cap is 0 (no cap, no policy). */
int64_t ob__space_reserve(int64_t cap, int64_t asked);

/* The level for `used` bytes (pages in use times the page size). */
ob__space_level_t ob__space_level(int64_t used, int64_t cap, int64_t reserve);

/* 1 if a new message may enter at level (critical: its type is marked). */
int ob__space_admits(ob__space_level_t level, int critical);

/* What a new message's row is estimated to add to the pages in use: its
** body and headers (`bytes`) plus this, for its indexes and page slack. */
#define OB__SPACE_ROW_SLACK 512

/* The whole judgement of a new message of `bytes` (its body and headers)
** with `used` bytes in use: sets *level to the level it would bring the
** database to and returns 1 if it may enter (critical: its type is marked),
** 0 if not. What space.c asks once per message. */
int ob__space_judge(int64_t used, int64_t bytes, int64_t cap, int64_t reserve,
                    int critical, ob__space_level_t* level);

/* How far reclaiming brings `used` down once it starts: one and a half
** reserves below the cap (an eighth of the cap without a reserve), so that
** new messages are accepted again for a while, not one at a time. */
int64_t ob__space_reclaim_target(int64_t cap, int64_t reserve);

/* The default cap (docs/decisions/0021-default-cap.md): with no cap
** configured the database gets DEFAULT_CAP_NUM/DEFAULT_CAP_DEN of its
** filesystem and the WAL a quarter of that, at most the 16 MiB of decision
** 0017, so that the database and its WAL stay within three quarters of the
** filesystem; the last quarter is for the -shm, other programs, the
** filesystem's own blocks and a transaction past the checkpoint. */
#define OB__DEFAULT_CAP_NUM 3
#define OB__DEFAULT_CAP_DEN 5
#define OB__DEFAULT_WAL_MAX (16LL * 1024 * 1024)

typedef struct ob__space_default_s {
  int64_t cap;        /* max_db_bytes; 0 when fs_bytes is 0 (unknown) */
  int64_t wal_bytes;  /* the WAL's checkpoint interval and size limit */
} ob__space_default_t;

/* The bytes of a filesystem this process may fill, from statvfs's fields:
** the blocks in use plus those free to an unprivileged process (the root
** reserve of ext4 is not ours even as root: the system needs it), times the
** fragment size. 0 when the fields make no sense. */
int64_t ob__space_fs_bytes(int64_t blocks, int64_t bfree, int64_t bavail,
                           int64_t frsize);

/* The default cap and WAL for a filesystem of fs_bytes (fs_bytes <= 0:
** both 0, no default). This function can't fail. */
void ob__space_default(int64_t fs_bytes, ob__space_default_t* out);

/* The WAL room for a cap: the derived WAL for a cap from the filesystem
** (derived != 0), else a quarter of a configured cap, at least 1 MiB
** (decision 0017); 0 without a cap (the options' WAL as given). */
int64_t ob__space_wal_room(int64_t cap, int derived);

/* Short words for a level, for stats and errors. */
const char* ob__space_level_name(ob__space_level_t level);

#endif
