package distrib

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgtype"

	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

// callColumns are the columns of calls that ingest copies, in order.
var callColumns = []string{
	"call_id", "tenant_id", "key_id", "edge_id", "endpoint", "model", "stream", "record_id",
	"record_name", "member_name", "status", "outcome", "error_code",
	"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
	"reserved_nanos", "cost_nanos", "cost_flagged", "job_hash",
	"cache_job_hash", "cache_previous_member", "cache_member", "cache_miss",
	"cache_previous_cached_input_tokens", "cache_estimated_miss_cost_nanos",
	"started_at", "duration_ms",
}

// attemptColumns are the columns of call_attempts that ingest copies.
var attemptColumns = []string{
	"call_id", "attempt_index", "record_name", "member_name", "status", "outcome", "kind",
	"reason", "latency_ms", "cost_nanos", "cost_estimated", "started_at",
}

// callRow is one decoded call record ready for COPY: the values of
// callColumns and the rows of its attempts.
type callRow struct {
	callID   string
	tenantID pgtype.UUID
	values   []any
	attempts [][]any
}

// toRow maps a call record onto the schema's columns. The schema's checks
// are met here rather than refused there, so that one odd record cannot
// fail a whole batch: counts below zero become 0, a status outside 0-999
// becomes 0, an unspecified outcome is derived from the status, text is
// made valid UTF-8 without NUL bytes, an id that is not a UUID (key,
// record) becomes NULL, and of two attempts with one index the first
// stands. It refuses only records that name no call or no
// valid tenant, which cannot be stored at all.
func toRow(r *telemetryv1.CallRecord, received time.Time) (callRow, error) {
	callID := clean(r.GetCallId())
	if callID == "" {
		return callRow{}, fmt.Errorf("call record without a call id")
	}
	tenant, ok := parseUUID(r.GetTenantId())
	if !ok {
		return callRow{}, fmt.Errorf("call record %q: tenant id %q is not a UUID", callID, r.GetTenantId())
	}
	key, _ := parseUUID(r.GetKeyId())
	record, _ := parseUUID(r.GetRecordId())
	started := received
	if r.GetStartedAt() != nil && r.GetStartedAt().IsValid() {
		started = r.GetStartedAt().AsTime()
	}
	u, c := r.GetUsage(), r.GetCache()
	miss := c.GetMiss()
	if miss != "member_changed" {
		miss = ""
	}
	status := httpStatus(r.GetStatus())
	row := callRow{callID: callID, tenantID: tenant}
	row.values = []any{
		callID, tenant, nullUUID(key), clean(r.GetEdgeId()), clean(r.GetEndpoint()), clean(r.GetModel()), r.GetStream(), nullUUID(record),
		clean(r.GetRecordName()), clean(r.GetMemberName()), status, callOutcome(r.GetOutcome(), status), clean(r.GetErrorCode()),
		nonNeg(u.GetInputTokens()), nonNeg(u.GetOutputTokens()), nonNeg(u.GetCacheReadTokens()), nonNeg(u.GetCacheWriteTokens()),
		nonNeg(r.GetReservedNanos()), nonNeg(r.GetCostNanos()), r.GetCostFlagged(), clean(r.GetJobHash()),
		clean(c.GetJobHash()), clean(c.GetPreviousMember()), clean(c.GetMember()), miss,
		nonNeg(c.GetPreviousCachedInputTokens()), nonNeg(c.GetEstimatedMissCostNanos()),
		started, millis(r.GetDuration().AsDuration()),
	}
	seen := make(map[uint32]bool, len(r.GetAttempts()))
	for _, a := range r.GetAttempts() {
		if seen[a.GetIndex()] {
			continue // one attempt per index: the first stands
		}
		seen[a.GetIndex()] = true
		var at any // NULL
		if a.GetStartedAt() != nil && a.GetStartedAt().IsValid() {
			at = a.GetStartedAt().AsTime()
		}
		idx := a.GetIndex()
		if idx > math.MaxInt32 {
			idx = math.MaxInt32
		}
		st := httpStatus(a.GetStatus())
		row.attempts = append(row.attempts, []any{
			callID, int32(idx), clean(a.GetRecordName()), clean(a.GetMemberName()), st, attemptOutcome(a.GetOutcome()), failureKind(a.GetKind()),
			clean(a.GetReason()), millis(a.GetLatency().AsDuration()), nonNeg(a.GetCostNanos()), a.GetCostEstimated(), at,
		})
	}
	return row, nil
}

// callOutcome is the calls.outcome text of o; an unspecified outcome is
// "answered" for a 2xx status and "failed" otherwise.
func callOutcome(o telemetryv1.CallOutcome, status int32) string {
	switch o {
	case telemetryv1.CallOutcome_CALL_OUTCOME_ANSWERED:
		return "answered"
	case telemetryv1.CallOutcome_CALL_OUTCOME_FAILED:
		return "failed"
	case telemetryv1.CallOutcome_CALL_OUTCOME_UNKNOWN:
		return "unknown"
	case telemetryv1.CallOutcome_CALL_OUTCOME_REFUSED:
		return "refused"
	case telemetryv1.CallOutcome_CALL_OUTCOME_CANCELLED:
		return "cancelled"
	}
	if status >= 200 && status < 300 {
		return "answered"
	}
	return "failed"
}

// attemptOutcome is the call_attempts.outcome text of o; unspecified is
// "failed".
func attemptOutcome(o telemetryv1.AttemptOutcome) string {
	switch o {
	case telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_ANSWERED:
		return "answered"
	case telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_FAILED_OVER:
		return "failed_over"
	case telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_SKIPPED:
		return "skipped"
	}
	return "failed"
}

// failureKind is the call_attempts.kind text of k: the enum name without
// its prefix, lower case ("rate_limited"), or "" when unspecified or
// unknown to this build.
func failureKind(k telemetryv1.FailureKind) string {
	if k == telemetryv1.FailureKind_FAILURE_KIND_UNSPECIFIED {
		return ""
	}
	name, ok := telemetryv1.FailureKind_name[int32(k)]
	if !ok {
		return ""
	}
	return strings.ToLower(strings.TrimPrefix(name, "FAILURE_KIND_"))
}

func httpStatus(s uint32) int32 {
	if s > 999 {
		return 0
	}
	return int32(s)
}

func nonNeg(v int64) int64 { return max(v, 0) }

func millis(d time.Duration) int64 { return max(d.Milliseconds(), 0) }

// clean makes s storable as PostgreSQL text: valid UTF-8 without NUL.
func clean(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
}

// parseUUID parses a UUID in text form.
func parseUUID(s string) (pgtype.UUID, bool) {
	if s == "" {
		return pgtype.UUID{}, false
	}
	var u pgtype.UUID
	if err := u.Scan(s); err != nil || !u.Valid {
		return pgtype.UUID{}, false
	}
	return u, true
}

// nullUUID is u for COPY, or nil (NULL) when u is not valid.
func nullUUID(u pgtype.UUID) any {
	if !u.Valid {
		return nil
	}
	return u
}
