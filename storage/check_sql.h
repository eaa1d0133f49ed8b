/* SPDX-License-Identifier: Apache-2.0 */
/*
** storage: the engine's invariant checks written in SQL both backends run
** as they are (one row per violation, column 0 its text; ob_check). One
** text for both, so a check cannot hold on one backend and be forgotten on
** the other. The macro is the initializer list of an array of strings.
*/
#ifndef OB_STORAGE_CHECK_SQL_H
#define OB_STORAGE_CHECK_SQL_H

/* The engine's own invariants. */
#define OB__CHECK_SQL_ENGINE                                                 \
    "SELECT 'outbox event ' || id || ' has attempt_count ' || attempt_count" \
    " FROM outbox_event WHERE attempt_count < 0",                            \
    /* The fence: a provider reference is confirmed once. */                 \
    "SELECT 'provider reference ' || reference || ' is confirmed for ' ||"   \
    " count(*) || ' effects' FROM effect WHERE state = 'confirmed' AND"      \
    " reference IS NOT NULL GROUP BY reference HAVING count(*) > 1",         \
    "SELECT 'effect ' || key || ' is ' || state || ' but has ' || successes" \
    " || ' provider successes and no outcome' FROM effect WHERE"             \
    " state = 'failed' AND successes > 0"

#endif
