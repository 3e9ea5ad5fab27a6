package console_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

// seededCall is a call stored as usage ingest stores it.
type seededCall struct {
	tenant, id, key, model, record, member string
	status                                 int32
	outcome, errorCode                     string
	cost                                   int64
	start                                  time.Time
	attempts                               []sqlc.InsertCallAttemptParams
	cacheMiss                              bool
}

// seedCalls stores calls (and their attempts) straight into the store, the
// way the admin API's tests do; keys are created through the API when
// first named.
func seedCalls(t *testing.T, h *harness, calls ...seededCall) {
	t.Helper()
	ctx := context.Background()
	tenants := map[string]pgtype.UUID{}
	keys := map[string]pgtype.UUID{}
	for _, c := range calls {
		tid, ok := tenants[c.tenant]
		if !ok {
			tn, err := h.Store.Q.GetTenantByName(ctx, c.tenant)
			if err != nil {
				t.Fatal(err)
			}
			tid, tenants[c.tenant] = tn.ID, tn.ID
		}
		var kid pgtype.UUID
		if c.key != "" {
			if kid, ok = keys[c.tenant+"/"+c.key]; !ok {
				admin := map[string]string{"a": tadmA, "b": tadmB}[c.tenant]
				k, err := h.API(admin).Keys.CreateApiKey(ctx, connect.NewRequest(&adminv1.CreateApiKeyRequest{Tenant: c.tenant, Name: c.key}))
				if err != nil {
					t.Fatal(err)
				}
				if kid, err = store.ParseUUID(k.Msg.GetApiKey().GetId()); err != nil {
					t.Fatal(err)
				}
				keys[c.tenant+"/"+c.key] = kid
			}
		}
		p := sqlc.InsertCallParams{
			CallID: c.id, TenantID: tid, KeyID: kid, EdgeID: "edge-1", Endpoint: "chat", Model: c.model,
			RecordName: c.record, MemberName: c.member, Status: c.status, Outcome: c.outcome, ErrorCode: c.errorCode,
			InputTokens: 10, OutputTokens: 20, CostNanos: c.cost, DurationMs: 1234,
			StartedAt: pgtype.Timestamptz{Time: c.start, Valid: true},
		}
		if c.cacheMiss {
			p.JobHash, p.CacheJobHash, p.CachePreviousMember, p.CacheMember, p.CacheMiss = "job-1", "job-1", "us1", c.member, "member_changed"
			p.CachePreviousCachedInputTokens, p.CacheEstimatedMissCostNanos = 4000, 12000
		}
		if _, err := h.Store.Q.InsertCall(ctx, p); err != nil {
			t.Fatal(err)
		}
		attempts := c.attempts
		if attempts == nil {
			attempts = []sqlc.InsertCallAttemptParams{{RecordName: c.record, MemberName: c.member, Status: c.status, Outcome: "answered", Kind: "none", LatencyMs: 800, CostNanos: c.cost}}
		}
		for i, a := range attempts {
			a.CallID, a.AttemptIndex = c.id, int32(i)
			a.StartedAt = pgtype.Timestamptz{Time: c.start.Add(time.Duration(i) * time.Second), Valid: true}
			if _, err := h.Store.Q.InsertCallAttempt(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// callIDs returns the ids of the calls list's rows.
func callIDs(doc *htmlNode) []string {
	var ids []string
	for _, r := range findAll(doc, "call-row") {
		ids = append(ids, attr(r, "data-call"))
	}
	return ids
}

func TestCallsPage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	now := time.Now().UTC().Truncate(time.Second)
	seedCalls(t, h,
		seededCall{tenant: "a", id: "c1", key: "app", model: "gpt-x", record: "gpt", member: "eu1", status: 200, outcome: "answered", cost: 1500, start: now.Add(-3 * time.Hour)},
		seededCall{tenant: "a", id: "c2", key: "app", model: "gpt-x", record: "gpt", member: "eu1", status: 200, outcome: "answered", cost: 2500, start: now.Add(-2 * time.Hour),
			cacheMiss: true,
			attempts: []sqlc.InsertCallAttemptParams{
				{RecordName: "gpt", MemberName: "us1", Status: 429, Outcome: "failed_over", Kind: "rate_limited", Reason: "upstream said 429 (retry-after 20s)", LatencyMs: 120},
				{RecordName: "gpt", MemberName: "eu1", Status: 200, Outcome: "answered", Kind: "none", LatencyMs: 950, CostNanos: 2500},
			}},
		seededCall{tenant: "a", id: "c3", key: "batch", model: "claude-y", record: "claude", member: "primary", status: 503, outcome: "failed", errorCode: "weir_pool_cooling", start: now.Add(-30 * time.Minute),
			attempts: []sqlc.InsertCallAttemptParams{{RecordName: "claude", MemberName: "primary", Status: 503, Outcome: "failed", Kind: "server_error", Reason: "503 from upstream", LatencyMs: 40}}},
		seededCall{tenant: "b", id: "cb", key: "bapp", model: "gpt-x", record: "gpt", member: "eu1", status: 200, outcome: "answered", cost: 9, start: now.Add(-time.Hour)},
	)
	b := h.login(t, tadmA)

	doc := b.page(t, "/console/calls", http.StatusOK)
	if got := strings.Join(callIDs(doc), ","); got != "c3,c2,c1" {
		t.Fatalf("calls %s", got)
	}
	row := findAll(doc, "call-row")[1]
	for id, want := range map[string]string{"call-model": "gpt-x", "call-key": "app", "call-served-by": "gpt/eu1",
		"call-status": "200", "call-outcome": "answered", "call-attempts": "2", "call-cost": "$0.0000025"} {
		if got := text(find(t, row, id)); got != want {
			t.Errorf("c2 %s = %q, want %q", id, got, want)
		}
	}
	if has(doc, "calls-next") {
		t.Error("a next page for 3 calls")
	}

	// Each filter narrows the list.
	for q, want := range map[string]string{
		"model=gpt-x":                  "c2,c1",
		"outcome=failed":               "c3",
		"member=us1":                   "c2",
		"record=claude":                "c3",
		"key=batch":                    "c3",
		"error_code=weir_pool_cooling": "c3",
		"since=1h":                     "c3",
		"since=24h&model=claude-y":     "c3",
		"from=" + now.Add(-3*time.Hour).UTC().Format(time.DateOnly) + "&model=gpt-x": "c2,c1", // the day of the earliest seeded call: from names a UTC day
	} {
		doc := b.page(t, "/console/calls?"+q, http.StatusOK)
		if got := strings.Join(callIDs(doc), ","); got != want {
			t.Errorf("%s: calls %q, want %q", q, got, want)
		}
		if q == "model=gpt-x" && attr(find(t, doc, "input-model"), "value") != "gpt-x" {
			t.Error("the filter form does not keep its values")
		}
	}

	// Refused filters: problems next to their inputs.
	doc = b.page(t, "/console/calls?member=Bad+Name", http.StatusUnprocessableEntity)
	find(t, doc, "problem-member")
	doc = b.page(t, "/console/calls?since=1h&from=2026-01-01", http.StatusUnprocessableEntity)
	find(t, doc, "problem-since")
	doc = b.page(t, "/console/calls?from=yesterday", http.StatusUnprocessableEntity)
	find(t, doc, "problem-from")

	// The drawer: served-by, each attempt, the cache report.
	doc = b.page(t, "/console/calls", http.StatusOK)
	link := find(t, findAll(doc, "call-row")[1], "call-link")
	doc = b.page(t, attr(link, "href"), http.StatusOK)
	if got := text(find(t, doc, "call-served-by")); got != "gpt / eu1" {
		t.Errorf("served by %q", got)
	}
	if got := text(find(t, doc, "call-edge")); got != "edge-1" {
		t.Errorf("edge %q", got)
	}
	attempts := findAll(doc, "attempt")
	if len(attempts) != 2 {
		t.Fatalf("%d attempts", len(attempts))
	}
	for i, want := range []map[string]string{
		{"attempt-member": "gpt/us1", "attempt-status": "429", "attempt-outcome": "failed_over", "attempt-reason": "rate_limited upstream said 429 (retry-after 20s)", "attempt-latency": "120ms", "attempt-cost": "$0"},
		{"attempt-member": "gpt/eu1", "attempt-status": "200", "attempt-outcome": "answered", "attempt-reason": "", "attempt-latency": "950ms", "attempt-cost": "$0.0000025"},
	} {
		for id, w := range want {
			if got := text(find(t, attempts[i], id)); got != w {
				t.Errorf("attempt %d %s = %q, want %q", i, id, got, w)
			}
		}
	}
	if got := text(find(t, doc, "cache-miss")); !strings.Contains(got, "member_changed") || !strings.Contains(got, "4000") || !strings.Contains(got, "$0.000012") {
		t.Errorf("cache report %q", got)
	}
	if got := text(find(t, doc, "cache-previous-member")); got != "us1" {
		t.Errorf("previous member %q", got)
	}
	if back := attr(find(t, doc, "call-back"), "href"); !strings.HasPrefix(back, "/console/calls") {
		t.Errorf("back link %q", back)
	}
	doc = b.page(t, "/console/calls/c1", http.StatusOK)
	find(t, doc, "call-cache-none")
	b.page(t, "/console/calls/nope", http.StatusNotFound)

	// Tenant b's admin cannot see tenant a's calls, by list or by id.
	other := h.login(t, tadmB)
	doc = other.page(t, "/console/calls?tenant=a", http.StatusOK)
	if got := strings.Join(callIDs(doc), ","); got != "cb" {
		t.Errorf("tenant b's admin lists %q", got)
	}
	doc = other.page(t, "/console/calls/c2?tenant=a", http.StatusNotFound)
	find(t, doc, "error-message")
	if strings.Contains(string(other.Last), "us1") {
		t.Error("tenant a's call leaked into tenant b's page")
	}
}

func TestCallsPagination(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	now := time.Now().UTC().Truncate(time.Second)
	var calls []seededCall
	for i := range 57 {
		calls = append(calls, seededCall{tenant: "a", id: fmt.Sprintf("p%02d", i), model: "m", record: "r", member: "primary",
			status: 200, outcome: "answered", start: now.Add(-time.Duration(i) * time.Minute)})
	}
	seedCalls(t, h, calls...)
	b := h.login(t, tadmA)
	doc := b.page(t, "/console/calls?model=m", http.StatusOK)
	ids := callIDs(doc)
	if len(ids) != 50 || ids[0] != "p00" || ids[49] != "p49" {
		t.Fatalf("first page: %d calls %v…", len(ids), ids[:1])
	}
	next := attr(find(t, doc, "calls-next"), "href")
	if !strings.Contains(next, "page_token=") || !strings.Contains(next, "model=m") {
		t.Fatalf("next link %q", next)
	}
	doc = b.page(t, next, http.StatusOK)
	if got := strings.Join(callIDs(doc), ","); got != "p50,p51,p52,p53,p54,p55,p56" {
		t.Fatalf("second page %s", got)
	}
	if has(doc, "calls-next") || !has(doc, "calls-first") {
		t.Error("last page links")
	}
}

// A call no member answered does not say "Served by": its page says what
// happened (failed, refused, cancelled, outcome unknown) and which member
// was tried last; the list shows no server for it.
func TestCallPageNotAnswered(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	now := time.Now().UTC().Truncate(time.Second)
	seedCalls(t, h,
		seededCall{tenant: "a", id: "ok", model: "m", record: "gpt", member: "eu1", status: 200, outcome: "answered", start: now.Add(-5 * time.Minute)},
		seededCall{tenant: "a", id: "failed", model: "m", record: "claude", member: "primary", status: 503, outcome: "failed", errorCode: "weir_pool_cooling", start: now.Add(-4 * time.Minute),
			attempts: []sqlc.InsertCallAttemptParams{
				{RecordName: "claude", MemberName: "backup", Outcome: "skipped", Kind: "rate_limited", Reason: "cooling"},
				{RecordName: "claude", MemberName: "spare", Status: 500, Outcome: "failed_over", Kind: "server_error", LatencyMs: 30},
				{RecordName: "claude", MemberName: "primary", Status: 503, Outcome: "failed", Kind: "server_error", LatencyMs: 40},
			}},
		seededCall{tenant: "a", id: "passed", model: "m", record: "claude", member: "primary", status: 400, outcome: "failed", start: now.Add(-3 * time.Minute),
			attempts: []sqlc.InsertCallAttemptParams{{RecordName: "claude", MemberName: "primary", Status: 400, Outcome: "failed", Kind: "client_error", LatencyMs: 40}}},
		seededCall{tenant: "a", id: "refused", model: "m", status: 402, outcome: "refused", errorCode: "weir_budget_exceeded", start: now.Add(-2 * time.Minute),
			attempts: []sqlc.InsertCallAttemptParams{}},
		seededCall{tenant: "a", id: "gone", model: "m", record: "gpt", member: "eu1", status: 499, outcome: "cancelled", start: now.Add(-time.Minute),
			attempts: []sqlc.InsertCallAttemptParams{{RecordName: "gpt", MemberName: "eu1", Outcome: "failed", Kind: "cancelled", LatencyMs: 40}}},
		seededCall{tenant: "a", id: "unknown", model: "m", record: "gpt", member: "eu1", status: 504, outcome: "unknown", errorCode: "weir_upstream_timeout", start: now,
			attempts: []sqlc.InsertCallAttemptParams{{RecordName: "gpt", MemberName: "eu1", Outcome: "failed", Kind: "timeout", LatencyMs: 40}}},
	)
	b := h.login(t, tadmA)

	doc := b.page(t, "/console/calls/ok", http.StatusOK)
	if got := text(find(t, doc, "call-served-by")); got != "gpt / eu1" {
		t.Errorf("answered: served by %q", got)
	}
	if has(doc, "call-result") {
		t.Error("answered call has a result line")
	}
	for id, want := range map[string]string{
		"failed":  "Failed: weir_pool_cooling after 2 attempts (last tried claude / primary)",
		"passed":  "Failed: status 400 after 1 attempt (last tried claude / primary)",
		"refused": "Refused: weir_budget_exceeded",
		"gone":    "Cancelled by the caller after 1 attempt (last tried gpt / eu1)",
		"unknown": "Outcome unknown: weir_upstream_timeout after 1 attempt (the model may have run) (last tried gpt / eu1)",
	} {
		doc := b.page(t, "/console/calls/"+id, http.StatusOK)
		if has(doc, "call-served-by") || strings.Contains(string(b.Last), "Served by") {
			t.Errorf("%s: the page of a call no member answered says it was served", id)
		}
		if got := text(find(t, doc, "call-result")); got != want {
			t.Errorf("%s: result %q, want %q", id, got, want)
		}
	}

	doc = b.page(t, "/console/calls", http.StatusOK)
	for _, row := range findAll(doc, "call-row") {
		id := attr(row, "data-call")
		served, tried := text(find(t, row, "call-served-by")), ""
		if l := findAll(row, "call-last-tried"); len(l) == 1 {
			tried = text(l[0])
		}
		want, wantTried := map[string]string{"ok": "gpt/eu1"}[id], map[string]string{
			"failed": "(last tried claude/primary)", "passed": "(last tried claude/primary)", "gone": "(last tried gpt/eu1)", "unknown": "(last tried gpt/eu1)",
		}[id]
		if want == "" {
			want = "—"
		}
		if served != want || tried != wantTried {
			t.Errorf("list row %s: served by %q, last tried %q; want %q, %q", id, served, tried, want, wantTried)
		}
	}
}
