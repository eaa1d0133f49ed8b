/* SPDX-License-Identifier: Apache-2.0 */
/*
** storage: the invariant checks written in SQL both backends run as they
** are (one row per violation, column 0 its text; ob_check). One text for
** both, so a check cannot hold on one backend and be forgotten on the
** other. Each macro is the initializer list of an array of strings.
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

/* The payout module's. */
#define OB__CHECK_SQL_PAYOUT                                                  \
    "SELECT 'payment ' || source_payment_id || ' has ' || count(*) ||"        \
    " ' payouts' FROM merchant_payout GROUP BY source_payment_id"             \
    " HAVING count(*) > 1",                                                   \
    /* The outbox rows counted per (cause, payment) first, then joined:       \
    ** no index on outbox_event.causation_id (schema 12, decision 0017),      \
    ** so a join on the table itself would scan it once per payout; this      \
    ** way it is one scan, a sort and an automatic index. */                  \
    "WITH o AS MATERIALIZED (SELECT causation_id, aggregate_id, count(*) AS n"\
    " FROM outbox_event WHERE event_type = 'MerchantPayoutCreated'"           \
    " GROUP BY causation_id, aggregate_id)"                                   \
    " SELECT 'payout ' || p.id || ' (payment ' || p.source_payment_id ||"     \
    " ') has ' || coalesce(o.n, 0) || ' MerchantPayoutCreated outbox rows'"   \
    " FROM merchant_payout p LEFT JOIN o"                                     \
    " ON o.causation_id = p.source_event_id"                                  \
    " AND o.aggregate_id = p.source_payment_id"                               \
    /* None is fine where a sweep may have deleted it once published. */      \
    " WHERE o.n > 1 OR (o.n IS NULL AND"                                      \
    " p.created_at > (SELECT coalesce(max(outbox_created_before_ms), -1)"     \
    " FROM retention_swept))",                                                \
    "SELECT 'outbox event ' || o.id || ' (MerchantPayoutCreated, cause ' ||"  \
    " o.causation_id || ') has no payout' FROM outbox_event o"                \
    " WHERE o.event_type = 'MerchantPayoutCreated' AND NOT EXISTS"            \
    " (SELECT 1 FROM merchant_payout p WHERE p.source_event_id ="             \
    " o.causation_id AND p.source_payment_id = o.aggregate_id)",              \
    /* A payout whose dedup record was already swept by retention is fine     \
    ** (older than every record left, or inside what a sweep recorded it      \
    ** deleted); one created inside the window without its record is not. */  \
    "SELECT 'payout ' || p.id || ' has no processed_message record for"       \
    " event ' || p.source_event_id FROM merchant_payout p"                    \
    " WHERE p.created_at >= (SELECT coalesce(min(processed_at), -1)"          \
    " FROM processed_message) AND p.created_at > (SELECT"                     \
    " coalesce(max(processed_before_ms), -1) FROM retention_swept)"           \
    " AND NOT EXISTS (SELECT 1 FROM"                                          \
    " processed_message m WHERE m.consumer_name = 'create-merchant-payout-v1'"\
    " AND m.message_id = p.source_event_id)"

/* The ChargeOrder module's. */
#define OB__CHECK_SQL_CHARGE                                               \
    "SELECT 'charge of order ' || c.order_id || ' (provider charge ' ||"   \
    " c.provider_charge_id || ') has no confirmed fence ' || c.effect_key" \
    " FROM charge c WHERE NOT EXISTS (SELECT 1 FROM effect f WHERE"        \
    " f.key = c.effect_key AND f.state = 'confirmed' AND"                  \
    " f.reference = c.provider_charge_id)",                                \
    "SELECT 'charge of order ' || c.order_id || ' has ' || count(o.id) ||" \
    " ' OrderCharged outbox rows' FROM charge c LEFT JOIN outbox_event o"  \
    " ON o.event_type = 'OrderCharged' AND o.aggregate_id = c.order_id"    \
    " GROUP BY c.order_id HAVING count(o.id) > 1 OR (count(o.id) = 0 AND"  \
    " c.created_at > (SELECT coalesce(max(outbox_created_before_ms), -1)"  \
    " FROM retention_swept))"

#endif
