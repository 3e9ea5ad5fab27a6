package distrib

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
	"weir.dev/routing/formats"

	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/db/sqlc"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

// callRow is one decoded call record: a row of calls and the rows of its
// attempts, with the schema's checks met (toRow).
type callRow struct {
	callID                         string
	tenantID, keyID, recordID      pgtype.UUID // keyID, recordID: NULL when not Valid
	edgeID, endpoint, model        string
	stream                         bool
	recordName, memberName         string
	status                         int32
	outcome, errorCode             string
	inputTokens, outputTokens      int64
	cacheReadTokens, cacheWriteTok int64
	reservedNanos, costNanos       int64
	costFlagged                    bool
	jobHash                        string
	cacheJobHash, cachePrevMember  string
	cacheMember, cacheMiss         string
	cachePrevCachedInput           int64
	cacheEstMissCostNanos          int64
	startedAt                      time.Time
	durationMs                     int64
	memberFormat                   string // a wire format's word, or ""
	translated                     bool
	attempts                       []attemptRow
}

// attemptRow is one row of call_attempts (its call id is its call's).
type attemptRow struct {
	index                  int32
	recordName, memberName string
	status                 int32
	outcome, kind, reason  string
	latencyMs, costNanos   int64
	costEstimated          bool
	startedAt              pgtype.Timestamptz // NULL when not Valid
}

// toRow maps a call record onto the schema's columns. The schema's checks
// are met here rather than refused there, so that one odd record cannot
// fail a whole batch: counts below zero become 0, a status outside 0-999
// becomes 0, an unspecified outcome is derived from the status, text is
// made valid UTF-8 without NUL bytes, a record id that is not a UUID
// becomes NULL, and of two attempts with one index the first stands. It
// refuses records that name no call or no valid tenant, which cannot be
// stored at all, and records whose key id is not a UUID: such a key is
// no tenant's (DESIGN.md §4, usage ingest refuses it).
func toRow(r *telemetryv1.CallRecord, received time.Time) (callRow, error) {
	callID := clean(r.GetCallId())
	if callID == "" {
		return callRow{}, fmt.Errorf("call record without a call id")
	}
	tenant, ok := parseUUID(r.GetTenantId())
	if !ok {
		return callRow{}, fmt.Errorf("call record %q: tenant id %q is not a UUID", callID, r.GetTenantId())
	}
	key, ok := parseUUID(r.GetKeyId())
	if !ok && r.GetKeyId() != "" {
		return callRow{}, fmt.Errorf("call record %q: key id %q is not a UUID", callID, r.GetKeyId())
	}
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
	row := callRow{
		callID: callID, tenantID: tenant, keyID: key, recordID: record,
		edgeID: clean(r.GetEdgeId()), endpoint: clean(r.GetEndpoint()), model: clean(r.GetModel()), stream: r.GetStream(),
		recordName: clean(r.GetRecordName()), memberName: clean(r.GetMemberName()),
		status: status, outcome: callOutcome(r.GetOutcome(), status), errorCode: clean(r.GetErrorCode()),
		inputTokens: nonNeg(u.GetInputTokens()), outputTokens: nonNeg(u.GetOutputTokens()),
		cacheReadTokens: nonNeg(u.GetCacheReadTokens()), cacheWriteTok: nonNeg(u.GetCacheWriteTokens()),
		reservedNanos: nonNeg(r.GetReservedNanos()), costNanos: nonNeg(r.GetCostNanos()), costFlagged: r.GetCostFlagged(),
		jobHash:      clean(r.GetJobHash()),
		cacheJobHash: clean(c.GetJobHash()), cachePrevMember: clean(c.GetPreviousMember()),
		cacheMember: clean(c.GetMember()), cacheMiss: miss,
		cachePrevCachedInput:  nonNeg(c.GetPreviousCachedInputTokens()),
		cacheEstMissCostNanos: nonNeg(c.GetEstimatedMissCostNanos()),
		startedAt:             started, durationMs: millis(r.GetDuration().AsDuration()),
		memberFormat: memberFormat(r.GetMemberFormat()), translated: r.GetTranslated(),
	}
	if n := len(r.GetAttempts()); n > 0 {
		row.attempts = make([]attemptRow, 0, n)
	}
	var seen map[uint32]bool
	for i, a := range r.GetAttempts() {
		if i > 0 { // one attempt per index: the first stands
			if seen == nil {
				seen = map[uint32]bool{r.GetAttempts()[0].GetIndex(): true}
			}
			if seen[a.GetIndex()] {
				continue
			}
			seen[a.GetIndex()] = true
		}
		var at pgtype.Timestamptz // NULL
		if a.GetStartedAt() != nil && a.GetStartedAt().IsValid() {
			at = pgtype.Timestamptz{Time: a.GetStartedAt().AsTime(), Valid: true}
		}
		idx := a.GetIndex()
		if idx > math.MaxInt32 {
			idx = math.MaxInt32
		}
		row.attempts = append(row.attempts, attemptRow{
			index: int32(idx), recordName: clean(a.GetRecordName()), memberName: clean(a.GetMemberName()),
			status: httpStatus(a.GetStatus()), outcome: attemptOutcome(a.GetOutcome()), kind: failureKind(a.GetKind()),
			reason: clean(a.GetReason()), latencyMs: millis(a.GetLatency().AsDuration()), costNanos: nonNeg(a.GetCostNanos()),
			costEstimated: a.GetCostEstimated(), startedAt: at,
		})
	}
	return row, nil
}

// callColumns are the rows of one batch as the arrays, one per column, that
// sqlc.IngestCalls unnests: one round trip carries them all, and Postgres
// reads them without staging them in a table first. Tenants is the batch's
// distinct tenants.
type callColumns struct {
	sqlc.IngestCallsParams
}

// grow makes room for calls calls and attempts attempts.
func (c *callColumns) grow(calls, attempts int) {
	for _, s := range []*[]string{&c.CallID, &c.EdgeID, &c.Endpoint, &c.Model, &c.RecordName, &c.MemberName,
		&c.Outcome, &c.ErrorCode, &c.JobHash, &c.CacheJobHash, &c.CachePreviousMember, &c.CacheMember, &c.CacheMiss} {
		*s = make([]string, 0, calls)
	}
	for _, s := range []*[]pgtype.UUID{&c.TenantID, &c.KeyID, &c.RecordID} {
		*s = make([]pgtype.UUID, 0, calls)
	}
	for _, s := range []*[]int64{&c.InputTokens, &c.OutputTokens, &c.CacheReadTokens, &c.CacheWriteTokens,
		&c.ReservedNanos, &c.CostNanos, &c.CachePreviousCachedInputTokens, &c.CacheEstimatedMissCostNanos, &c.DurationMs} {
		*s = make([]int64, 0, calls)
	}
	c.Stream, c.CostFlagged = make([]bool, 0, calls), make([]bool, 0, calls)
	c.MemberFormat, c.Translated = make([]string, 0, calls), make([]bool, 0, calls)
	c.Status, c.StartedAt = make([]int32, 0, calls), make([]pgtype.Timestamptz, 0, calls)
	for _, s := range []*[]string{&c.AttemptCallID, &c.AttemptRecordName, &c.AttemptMemberName, &c.AttemptOutcome,
		&c.AttemptKind, &c.AttemptReason} {
		*s = make([]string, 0, attempts)
	}
	c.AttemptIndex, c.AttemptStatus = make([]int32, 0, attempts), make([]int32, 0, attempts)
	c.AttemptLatencyMs, c.AttemptCostNanos = make([]int64, 0, attempts), make([]int64, 0, attempts)
	c.AttemptCostEstimated, c.AttemptStartedAt = make([]bool, 0, attempts), make([]pgtype.Timestamptz, 0, attempts)
}

// add appends r and its attempts.
func (c *callColumns) add(r *callRow) {
	c.CallID = append(c.CallID, r.callID)
	c.TenantID = append(c.TenantID, r.tenantID)
	c.KeyID = append(c.KeyID, r.keyID)
	c.EdgeID = append(c.EdgeID, r.edgeID)
	c.Endpoint = append(c.Endpoint, r.endpoint)
	c.Model = append(c.Model, r.model)
	c.Stream = append(c.Stream, r.stream)
	c.RecordID = append(c.RecordID, r.recordID)
	c.RecordName = append(c.RecordName, r.recordName)
	c.MemberName = append(c.MemberName, r.memberName)
	c.Status = append(c.Status, r.status)
	c.Outcome = append(c.Outcome, r.outcome)
	c.ErrorCode = append(c.ErrorCode, r.errorCode)
	c.InputTokens = append(c.InputTokens, r.inputTokens)
	c.OutputTokens = append(c.OutputTokens, r.outputTokens)
	c.CacheReadTokens = append(c.CacheReadTokens, r.cacheReadTokens)
	c.CacheWriteTokens = append(c.CacheWriteTokens, r.cacheWriteTok)
	c.ReservedNanos = append(c.ReservedNanos, r.reservedNanos)
	c.CostNanos = append(c.CostNanos, r.costNanos)
	c.CostFlagged = append(c.CostFlagged, r.costFlagged)
	c.JobHash = append(c.JobHash, r.jobHash)
	c.CacheJobHash = append(c.CacheJobHash, r.cacheJobHash)
	c.CachePreviousMember = append(c.CachePreviousMember, r.cachePrevMember)
	c.CacheMember = append(c.CacheMember, r.cacheMember)
	c.CacheMiss = append(c.CacheMiss, r.cacheMiss)
	c.CachePreviousCachedInputTokens = append(c.CachePreviousCachedInputTokens, r.cachePrevCachedInput)
	c.CacheEstimatedMissCostNanos = append(c.CacheEstimatedMissCostNanos, r.cacheEstMissCostNanos)
	c.StartedAt = append(c.StartedAt, pgtype.Timestamptz{Time: r.startedAt, Valid: true})
	c.DurationMs = append(c.DurationMs, r.durationMs)
	c.MemberFormat = append(c.MemberFormat, r.memberFormat)
	c.Translated = append(c.Translated, r.translated)
	for _, a := range r.attempts {
		c.AttemptCallID = append(c.AttemptCallID, r.callID)
		c.AttemptIndex = append(c.AttemptIndex, a.index)
		c.AttemptRecordName = append(c.AttemptRecordName, a.recordName)
		c.AttemptMemberName = append(c.AttemptMemberName, a.memberName)
		c.AttemptStatus = append(c.AttemptStatus, a.status)
		c.AttemptOutcome = append(c.AttemptOutcome, a.outcome)
		c.AttemptKind = append(c.AttemptKind, a.kind)
		c.AttemptReason = append(c.AttemptReason, a.reason)
		c.AttemptLatencyMs = append(c.AttemptLatencyMs, a.latencyMs)
		c.AttemptCostNanos = append(c.AttemptCostNanos, a.costNanos)
		c.AttemptCostEstimated = append(c.AttemptCostEstimated, a.costEstimated)
		c.AttemptStartedAt = append(c.AttemptStartedAt, a.startedAt)
	}
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

// memberFormat keeps a call's member format when it is a wire format's name
// ("gemini"), else "": an edge's odd value never fails a batch
// (CallRecord.member_format, R-FMT-6).
func memberFormat(s string) string {
	if _, ok := formats.WireFormats.ParseStored(s); ok {
		return s
	}
	return ""
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
