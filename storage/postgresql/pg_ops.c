/* SPDX-License-Identifier: Apache-2.0 */
/* The PostgreSQL backend's table: every member of store_ops.h. (A member
** left NULL would make its dispatcher, storage/store.c, answer OB_ENOTSUP
** naming the function.) */
#include "storage/postgresql/pg_int.h"
#include "storage/sql.h"

const ob__store_ops_t ob__pg_store_ops = {
    .backend = "postgresql",
    .open = ob__pg_db_open_ext,
    /* pg_db.c: the connection and its transactions */
    .db_page_size = ob__pg_db_page_size,
    .db_repage = ob__pg_db_repage,
    .db_set_wal_policy = ob__pg_db_set_wal_policy,
    .db_close = ob__pg_db_close,
    .db_begin = ob__pg_db_begin,
    .db_begin_relaxed = ob__pg_db_begin_relaxed,
    .db_begin_read = ob__pg_db_begin_read,
    .db_commit = ob__pg_db_commit,
    .db_rollback = ob__pg_db_rollback,
    /* pg_schema.c */
    .schema_migrate = ob__pg_schema_migrate,
    .schema_identify = ob__pg_schema_identify,
    /* pg_space.c: the WAL is the server's */
    .space_checkpoint = ob__pg_space_checkpoint,
    /* pg_user_sql.c: handler SQL */
    .user_exec = ob__pg_user_exec,
    .user_cache_clear = ob__pg_user_cache_clear,
};
