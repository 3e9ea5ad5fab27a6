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
// ingestStaged unnests: one round trip carries them all, and Postgres reads
// them without staging them in a table first.
type callColumns struct {
	tenants []pgtype.UUID // the distinct tenants of the calls

	callID, edgeID, endpoint, model, recordName, memberName, outcome, errorCode []string
	jobHash, cacheJobHash, cachePrevMember, cacheMember, cacheMiss              []string
	tenantID, keyID, recordID                                                   []pgtype.UUID
	stream, costFlagged                                                         []bool
	status                                                                      []int32
	inputTokens, outputTokens, cacheReadTokens, cacheWriteTok                   []int64
	reservedNanos, costNanos, cachePrevCachedInput, cacheEstMissCostNanos       []int64
	durationMs                                                                  []int64
	startedAt                                                                   []time.Time

	aCallID, aRecordName, aMemberName, aOutcome, aKind, aReason []string
	aIndex, aStatus                                             []int32
	aLatencyMs, aCostNanos                                      []int64
	aCostEstimated                                              []bool
	aStartedAt                                                  []pgtype.Timestamptz
}

// grow makes room for calls calls and attempts attempts.
func (c *callColumns) grow(calls, attempts int) {
	for _, s := range []*[]string{&c.callID, &c.edgeID, &c.endpoint, &c.model, &c.recordName, &c.memberName,
		&c.outcome, &c.errorCode, &c.jobHash, &c.cacheJobHash, &c.cachePrevMember, &c.cacheMember, &c.cacheMiss} {
		*s = make([]string, 0, calls)
	}
	for _, s := range []*[]pgtype.UUID{&c.tenantID, &c.keyID, &c.recordID} {
		*s = make([]pgtype.UUID, 0, calls)
	}
	for _, s := range []*[]int64{&c.inputTokens, &c.outputTokens, &c.cacheReadTokens, &c.cacheWriteTok,
		&c.reservedNanos, &c.costNanos, &c.cachePrevCachedInput, &c.cacheEstMissCostNanos, &c.durationMs} {
		*s = make([]int64, 0, calls)
	}
	c.stream, c.costFlagged = make([]bool, 0, calls), make([]bool, 0, calls)
	c.status, c.startedAt = make([]int32, 0, calls), make([]time.Time, 0, calls)
	for _, s := range []*[]string{&c.aCallID, &c.aRecordName, &c.aMemberName, &c.aOutcome, &c.aKind, &c.aReason} {
		*s = make([]string, 0, attempts)
	}
	c.aIndex, c.aStatus = make([]int32, 0, attempts), make([]int32, 0, attempts)
	c.aLatencyMs, c.aCostNanos = make([]int64, 0, attempts), make([]int64, 0, attempts)
	c.aCostEstimated, c.aStartedAt = make([]bool, 0, attempts), make([]pgtype.Timestamptz, 0, attempts)
}

// add appends r and its attempts.
func (c *callColumns) add(r *callRow) {
	c.callID = append(c.callID, r.callID)
	c.tenantID = append(c.tenantID, r.tenantID)
	c.keyID = append(c.keyID, r.keyID)
	c.edgeID = append(c.edgeID, r.edgeID)
	c.endpoint = append(c.endpoint, r.endpoint)
	c.model = append(c.model, r.model)
	c.stream = append(c.stream, r.stream)
	c.recordID = append(c.recordID, r.recordID)
	c.recordName = append(c.recordName, r.recordName)
	c.memberName = append(c.memberName, r.memberName)
	c.status = append(c.status, r.status)
	c.outcome = append(c.outcome, r.outcome)
	c.errorCode = append(c.errorCode, r.errorCode)
	c.inputTokens = append(c.inputTokens, r.inputTokens)
	c.outputTokens = append(c.outputTokens, r.outputTokens)
	c.cacheReadTokens = append(c.cacheReadTokens, r.cacheReadTokens)
	c.cacheWriteTok = append(c.cacheWriteTok, r.cacheWriteTok)
	c.reservedNanos = append(c.reservedNanos, r.reservedNanos)
	c.costNanos = append(c.costNanos, r.costNanos)
	c.costFlagged = append(c.costFlagged, r.costFlagged)
	c.jobHash = append(c.jobHash, r.jobHash)
	c.cacheJobHash = append(c.cacheJobHash, r.cacheJobHash)
	c.cachePrevMember = append(c.cachePrevMember, r.cachePrevMember)
	c.cacheMember = append(c.cacheMember, r.cacheMember)
	c.cacheMiss = append(c.cacheMiss, r.cacheMiss)
	c.cachePrevCachedInput = append(c.cachePrevCachedInput, r.cachePrevCachedInput)
	c.cacheEstMissCostNanos = append(c.cacheEstMissCostNanos, r.cacheEstMissCostNanos)
	c.startedAt = append(c.startedAt, r.startedAt)
	c.durationMs = append(c.durationMs, r.durationMs)
	for _, a := range r.attempts {
		c.aCallID = append(c.aCallID, r.callID)
		c.aIndex = append(c.aIndex, a.index)
		c.aRecordName = append(c.aRecordName, a.recordName)
		c.aMemberName = append(c.aMemberName, a.memberName)
		c.aStatus = append(c.aStatus, a.status)
		c.aOutcome = append(c.aOutcome, a.outcome)
		c.aKind = append(c.aKind, a.kind)
		c.aReason = append(c.aReason, a.reason)
		c.aLatencyMs = append(c.aLatencyMs, a.latencyMs)
		c.aCostNanos = append(c.aCostNanos, a.costNanos)
		c.aCostEstimated = append(c.aCostEstimated, a.costEstimated)
		c.aStartedAt = append(c.aStartedAt, a.startedAt)
	}
}

// args are ingestStaged's arguments, in the order of its parameters.
func (c *callColumns) args() []any {
	return []any{
		c.tenants,
		c.callID, c.tenantID, c.keyID, c.edgeID, c.endpoint, c.model, c.stream, c.recordID,
		c.recordName, c.memberName, c.status, c.outcome, c.errorCode,
		c.inputTokens, c.outputTokens, c.cacheReadTokens, c.cacheWriteTok,
		c.reservedNanos, c.costNanos, c.costFlagged, c.jobHash,
		c.cacheJobHash, c.cachePrevMember, c.cacheMember, c.cacheMiss,
		c.cachePrevCachedInput, c.cacheEstMissCostNanos, c.startedAt, c.durationMs,
		c.aCallID, c.aIndex, c.aRecordName, c.aMemberName, c.aStatus, c.aOutcome, c.aKind,
		c.aReason, c.aLatencyMs, c.aCostNanos, c.aCostEstimated, c.aStartedAt,
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
