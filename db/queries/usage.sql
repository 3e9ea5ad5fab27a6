-- name: ListUsageCallsPage :many
-- ListUsageCallsPage is one keyset page of a tenant's calls started in
-- [from_time, to_time) after (after_time, after_call_id), ordered by
-- started_at then call_id bytes. The first page passes after_time =
-- from_time and an empty after_call_id (call ids are never empty). Reads
-- calls_tenant_started_idx backwards (started_at ascending) and sorts only
-- the calls of equal started_at by call_id (incremental sort). Usage
-- export queries compare text with COLLATE "C" (bytes), as Go does.
SELECT c.call_id, c.started_at, coalesce(k.name, '')::text AS key_name,
       c.record_id, c.record_name, c.member_name, c.model, c.outcome,
       c.input_tokens, c.output_tokens, c.cache_read_tokens, c.cache_write_tokens,
       c.cost_nanos, c.cost_flagged
FROM calls c
LEFT JOIN api_keys k ON k.id = c.key_id AND k.tenant_id = c.tenant_id
WHERE c.tenant_id = @tenant_id
  AND c.started_at >= @after_time AND c.started_at < @to_time
  AND (c.started_at > @after_time OR c.call_id COLLATE "C" > @after_call_id::text)
ORDER BY c.started_at, c.call_id COLLATE "C"
LIMIT @page_size;

-- name: SumAbandonedAttemptCosts :many
-- SumAbandonedAttemptCosts is, for each of the calls that has any, the sum
-- of the estimated costs of its abandoned attempts that are charged besides
-- the call's own cost: at most one row per call id. Charging rule (see
-- admin.UsageService): the estimated cost of an abandoned attempt
-- (cost_estimated, cost_nanos <> 0, outcome <> 'answered') is charged to the
-- attempt's member, except the last attempt of a flagged call when it is on
-- the call's own record and member, whose estimate already is the call's
-- cost. AggregateUsage spells the rule the same way.
SELECT a.call_id, sum(a.cost_nanos)::bigint AS cost_nanos
FROM call_attempts a
JOIN calls c ON c.call_id = a.call_id
WHERE a.call_id = ANY(@call_ids::text[])
  AND a.cost_estimated AND a.cost_nanos <> 0 AND a.outcome <> 'answered'
  AND NOT (c.cost_flagged AND a.record_name = c.record_name AND a.member_name = c.member_name
           AND a.attempt_index = (SELECT max(l.attempt_index) FROM call_attempts l WHERE l.call_id = a.call_id))
GROUP BY a.call_id;

-- name: AggregateUsage :many
-- AggregateUsage is the usage of the tenants' calls started in
-- [from_time, to_time), grouped by UTC bucket (date_trunc unit: hour, day or
-- month), tenant, key name, record, member, model and managed, in export
-- order. A call is counted on its own record and member; abandoned
-- attempts' estimates go to the attempt's record and member (managed by
-- record name when the record differs from the call's), by the rule of
-- SumAbandonedAttemptCosts.
-- The caller keeps [from_time, to_time) short (a UTC day) so that the
-- result, one row per group, stays small and attempts are read by call id.
WITH c AS (
    SELECT c.call_id, c.tenant_id, c.key_id, c.record_id, c.record_name, c.member_name, c.model,
           c.outcome, c.input_tokens, c.output_tokens, c.cache_read_tokens, c.cache_write_tokens,
           c.cost_nanos, c.cost_flagged,
           coalesce(c.record_id = ANY(@managed_ids::uuid[]), false) AS managed,
           date_trunc(@unit::text, c.started_at, 'UTC') AS bucket
    FROM calls c
    WHERE c.tenant_id = ANY(@tenant_ids::uuid[])
      AND c.started_at >= @from_time AND c.started_at < @to_time
), charges AS (
    SELECT c.bucket, c.tenant_id, c.key_id, c.record_name, c.member_name, c.model, c.managed,
           1::bigint AS calls, CASE WHEN c.outcome <> 'answered' THEN 1 ELSE 0 END::bigint AS failed_calls,
           c.input_tokens, c.output_tokens, c.cache_read_tokens, c.cache_write_tokens, c.cost_nanos,
           CASE WHEN c.cost_flagged THEN c.cost_nanos ELSE 0 END::bigint AS estimated_cost_nanos
    FROM c
    UNION ALL
    SELECT c.bucket, c.tenant_id, c.key_id, a.record_name, a.member_name, c.model,
           CASE WHEN a.record_name <> c.record_name THEN a.record_name = ANY(@managed_names::text[]) ELSE c.managed END,
           0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, a.cost_nanos, a.cost_nanos
    FROM c
    JOIN call_attempts a ON a.call_id = c.call_id
    WHERE a.cost_estimated AND a.cost_nanos <> 0 AND a.outcome <> 'answered'
      AND NOT (c.cost_flagged AND a.record_name = c.record_name AND a.member_name = c.member_name
               AND a.attempt_index = (SELECT max(l.attempt_index) FROM call_attempts l WHERE l.call_id = a.call_id))
)
SELECT x.bucket::timestamptz AS bucket_start, t.name::text AS tenant, coalesce(k.name, '')::text AS key_name,
       x.record_name::text AS record, x.member_name::text AS member, x.model::text AS model, x.managed::bool AS managed,
       sum(x.calls)::bigint AS calls, sum(x.failed_calls)::bigint AS failed_calls,
       sum(x.input_tokens)::bigint AS input_tokens, sum(x.output_tokens)::bigint AS output_tokens,
       sum(x.cache_read_tokens)::bigint AS cache_read_tokens, sum(x.cache_write_tokens)::bigint AS cache_write_tokens,
       sum(x.cost_nanos)::bigint AS cost_nanos, sum(x.estimated_cost_nanos)::bigint AS estimated_cost_nanos
FROM charges x
JOIN tenants t ON t.id = x.tenant_id
LEFT JOIN api_keys k ON k.id = x.key_id AND k.tenant_id = x.tenant_id
GROUP BY x.bucket, t.name, coalesce(k.name, ''), x.record_name, x.member_name, x.model, x.managed
ORDER BY x.bucket, t.name COLLATE "C", coalesce(k.name, '') COLLATE "C", x.record_name COLLATE "C",
         x.member_name COLLATE "C", x.model COLLATE "C", x.managed;
