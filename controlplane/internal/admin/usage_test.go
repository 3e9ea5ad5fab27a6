package admin

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	gocmp "github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"google.golang.org/protobuf/testing/protocmp"

	"weir.dev/controlplane/internal/store"
	"weir.dev/db/pgtest"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

var usageGranularities = []adminv1.UsageGranularity{
	adminv1.UsageGranularity_USAGE_GRANULARITY_CALL,
	adminv1.UsageGranularity_USAGE_GRANULARITY_HOUR,
	adminv1.UsageGranularity_USAGE_GRANULARITY_DAY,
	adminv1.UsageGranularity_USAGE_GRANULARITY_MONTH,
}

// countingQueries counts the queries of the usage export and the most rows
// one of them returned.
type countingQueries struct {
	*sqlc.Queries
	mu                        sync.Mutex
	pageQueries, sumQueries   int
	maxPageRows, maxSumRows   int
	aggQueries                int
	afterCancel, beforeCancel int
}

func (c *countingQueries) ListUsageCallsPage(ctx context.Context, arg sqlc.ListUsageCallsPageParams) ([]sqlc.ListUsageCallsPageRow, error) {
	rows, err := c.Queries.ListUsageCallsPage(ctx, arg)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pageQueries++
	c.maxPageRows = max(c.maxPageRows, len(rows))
	c.count(ctx)
	return rows, err
}

func (c *countingQueries) SumAbandonedAttemptCosts(ctx context.Context, ids []string) ([]sqlc.SumAbandonedAttemptCostsRow, error) {
	rows, err := c.Queries.SumAbandonedAttemptCosts(ctx, ids)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sumQueries++
	c.maxSumRows = max(c.maxSumRows, len(rows))
	c.count(ctx)
	return rows, err
}

func (c *countingQueries) AggregateUsage(ctx context.Context, arg sqlc.AggregateUsageParams) ([]sqlc.AggregateUsageRow, error) {
	rows, err := c.Queries.AggregateUsage(ctx, arg)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.aggQueries++
	c.count(ctx)
	return rows, err
}

func (c *countingQueries) count(ctx context.Context) {
	if ctx.Err() != nil {
		c.afterCancel++
	} else {
		c.beforeCancel++
	}
}

// usageFixture is a database with three tenants' calls over a week around a
// month's end: several keys (a revoked and a new key of the same name, calls
// without a key or with another tenant's key), tenant and managed records
// (one tenant record named like a managed one), members and models, every
// outcome, flagged calls, abandoned attempts with estimated costs, and calls
// that start at the same microsecond, in one tenant and across tenants.
type usageFixture struct {
	q       *sqlc.Queries
	tenants []sqlc.Tenant // by name, as ListTenants
	acme    sqlc.Tenant
	calls   int
}

func newUsageFixture(t *testing.T) *usageFixture {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.New(t)
	q := sqlc.New(pool)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// With a linguistic collation, as a database may have, the order of text
	// in Postgres is not Go's (bytes), unless queries say COLLATE "C".
	var icu bool
	must(pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_collation WHERE collname = 'und-x-icu')`).Scan(&icu))
	if icu {
		_, err := pool.Exec(ctx, `
			ALTER TABLE tenants ALTER COLUMN name TYPE text COLLATE "und-x-icu";
			ALTER TABLE api_keys ALTER COLUMN name TYPE text COLLATE "und-x-icu";
			ALTER TABLE calls ALTER COLUMN call_id TYPE text COLLATE "und-x-icu",
				ALTER COLUMN record_name TYPE text COLLATE "und-x-icu", ALTER COLUMN member_name TYPE text COLLATE "und-x-icu",
				ALTER COLUMN model TYPE text COLLATE "und-x-icu";
			ALTER TABLE call_attempts ALTER COLUMN call_id TYPE text COLLATE "und-x-icu",
				ALTER COLUMN record_name TYPE text COLLATE "und-x-icu", ALTER COLUMN member_name TYPE text COLLATE "und-x-icu"`)
		must(err)
	}
	managed := map[string]pgtype.UUID{}
	for _, name := range []string{"shared", "claude"} {
		r, err := q.CreateProviderRecord(ctx, sqlc.CreateProviderRecordParams{TenantID: store.Cluster, Name: name, WireFormat: "openai", BaseURL: text("https://m.example.com"),
			AuthKind: "none", OauthScopes: []string{}, Tags: []byte(`{}`), AllowedRegions: []string{}, RateLimitHeaders: []byte(`{}`)})
		must(err)
		managed[name] = r.ID
	}
	type recordRef struct {
		id   pgtype.UUID
		name string
	}
	type tenantData struct {
		t       sqlc.Tenant
		keys    []pgtype.UUID
		records []recordRef
	}
	var tds []*tenantData
	for _, name := range []string{"acme", "b_c", "b-d"} {
		tn, err := q.CreateTenant(ctx, sqlc.CreateTenantParams{Name: name})
		must(err)
		td := &tenantData{t: tn, records: []recordRef{{managed["shared"], "shared"}, {managed["claude"], "claude"}, {}}}
		for _, k := range []string{"ci", "prod", "prod-2", "pro_d", "ci"} {
			if k == "ci" && len(td.keys) > 0 {
				// The second "ci" replaces the revoked first one: both ids name "ci".
				_, err := q.RevokeAPIKey(ctx, sqlc.RevokeAPIKeyParams{TenantID: tn.ID, Name: "ci"})
				must(err)
			}
			key, err := q.CreateAPIKey(ctx, sqlc.CreateAPIKeyParams{TenantID: tn.ID, Name: k, SHA256: sha256Of(name + k + fmt.Sprint(len(td.keys))),
				AllowedModels: []string{}, AllowedRecords: []string{}, Regions: []string{}})
			must(err)
			td.keys = append(td.keys, key.ID)
		}
		for _, rn := range []string{"gpt", "shared"} {
			r, err := q.CreateProviderRecord(ctx, sqlc.CreateProviderRecordParams{TenantID: tn.ID, Name: rn, WireFormat: "openai", BaseURL: text("https://t.example.com"),
				AuthKind: "none", OauthScopes: []string{}, Tags: []byte(`{}`), AllowedRegions: []string{}, RateLimitHeaders: []byte(`{}`)})
			must(err)
			td.records = append(td.records, recordRef{r.ID, rn})
		}
		tds = append(tds, td)
	}
	// Another tenant's key on a call reads as no key.
	tds[0].keys = append(tds[0].keys, tds[1].keys[1], pgtype.UUID{})
	tds[1].keys = append(tds[1].keys, pgtype.UUID{})

	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	members := []string{"eu1", "us1", "primary", "Eu2"}
	base := time.Date(2026, 2, 25, 0, 0, 0, 0, time.UTC)
	var callRows, attemptRows [][]any
	var starts []time.Time
	const n = 3000
	for i := range n {
		td := tds[rng.IntN(len(tds))]
		start := base.Add(time.Duration(rng.Int64N(int64(7 * 24 * time.Hour)))).Truncate(time.Microsecond)
		if len(starts) > 0 && rng.IntN(10) == 0 {
			start = starts[rng.IntN(len(starts))] // the same microsecond as another call
		}
		starts = append(starts, start)
		id := fmt.Sprintf("%s%05d", pick("c-", "C_", "_", "z", "é", "c"), rng.IntN(100000)) + fmt.Sprint(i)
		rec := td.records[rng.IntN(len(td.records))]
		if !rec.id.Valid {
			rec.name = pick("gone", "shared", "")
		}
		member := members[rng.IntN(len(members))]
		outcome := "answered"
		if rng.IntN(4) == 0 {
			outcome = pick("failed", "unknown", "refused", "cancelled")
		}
		flagged := outcome == "unknown" && rng.IntN(3) > 0
		cost := rng.Int64N(5000)
		callRows = append(callRows, []any{id, td.t.ID, td.keys[rng.IntN(len(td.keys))], "edge-1", pick("gpt-x", "claude-3", "Model-B"),
			rec.id, rec.name, member, outcome, rng.Int64N(1000), rng.Int64N(1000), rng.Int64N(100), rng.Int64N(100), cost, flagged, start})
		attempts := 1 + rng.IntN(4)
		for a := range attempts {
			last := a == attempts-1
			ar, am := rec.name, member
			if !last || rng.IntN(3) == 0 {
				ar, am = pick(rec.name, "shared", "claude", "gpt", "other"), members[rng.IntN(len(members))]
			}
			ao := "failed_over"
			switch {
			case last && outcome == "answered":
				ao = "answered"
			case last:
				ao = "failed"
			case rng.IntN(8) == 0:
				ao = "skipped"
			}
			est := rng.IntN(3) == 0 || (last && flagged)
			acost := rng.Int64N(50)
			if last && flagged {
				acost = cost
			}
			if rng.IntN(10) == 0 {
				acost = 0
			}
			attemptRows = append(attemptRows, []any{id, int32(a), ar, am, ao, acost, est})
		}
	}
	_, err := pool.CopyFrom(ctx, pgx.Identifier{"calls"}, []string{"call_id", "tenant_id", "key_id", "edge_id", "model",
		"record_id", "record_name", "member_name", "outcome", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
		"cost_nanos", "cost_flagged", "started_at"}, pgx.CopyFromRows(callRows))
	must(err)
	_, err = pool.CopyFrom(ctx, pgx.Identifier{"call_attempts"}, []string{"call_id", "attempt_index", "record_name", "member_name",
		"outcome", "cost_nanos", "cost_estimated"}, pgx.CopyFromRows(attemptRows))
	must(err)
	_, err = pool.Exec(ctx, "ANALYZE calls; ANALYZE call_attempts")
	must(err)
	tenants, err := q.ListTenants(ctx)
	must(err)
	return &usageFixture{q: q, tenants: tenants, acme: tds[0].t, calls: n}
}

func sha256Of(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }

// export runs UsageService.export and returns its messages.
func (f *usageFixture) export(t *testing.T, s *UsageService, tenants []sqlc.Tenant, from, to time.Time, g adminv1.UsageGranularity) []*adminv1.ExportUsageResponse {
	t.Helper()
	var msgs []*adminv1.ExportUsageResponse
	if err := s.export(context.Background(), tenants, from, to, g, func(m *adminv1.ExportUsageResponse) error {
		msgs = append(msgs, m)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return msgs
}

func TestExportUsageMatchesInMemoryExport(t *testing.T) {
	t.Parallel()
	f := newUsageFixture(t)
	ranges := [][2]time.Time{
		{time.Date(2026, 2, 26, 5, 30, 0, 123456000, time.UTC), time.Date(2026, 3, 3, 17, 45, 0, 0, time.UTC)},
		{time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)},
	}
	scopes := map[string][]sqlc.Tenant{"acme": {f.acme}, "all": f.tenants}
	for _, pageSize := range []int{0, 7, 64} {
		for scope, tenants := range scopes {
			for _, r := range ranges {
				for _, g := range usageGranularities {
					name := fmt.Sprintf("page %d %s %s %v", pageSize, scope, g, r[0].Format(time.RFC3339Nano))
					want := refExportUsage(t, f.q, tenants, r[0], r[1], g)
					cq := &countingQueries{Queries: f.q}
					msgs := f.export(t, &UsageService{q: cq, pageSize: pageSize}, tenants, r[0], r[1], g)
					var got []*adminv1.UsageRow
					for i, m := range msgs {
						// Messages are cut as before: full ones of 1000 rows, then the rest.
						if n := len(m.GetRows()); n == 0 || n > usageRowsPerMsg || (n != usageRowsPerMsg && i != len(msgs)-1) {
							t.Errorf("%s: message %d of %d has %d rows", name, i, len(msgs), n)
						}
						got = append(got, m.GetRows()...)
					}
					if diff := gocmp.Diff(want, got, protocmp.Transform()); diff != "" {
						t.Errorf("%s: rows differ from the in-memory export (-want +got):\n%s", name, diff)
					}
					if len(want) == 0 {
						t.Errorf("%s: no rows: the fixture misses the range", name)
					}
					if g == adminv1.UsageGranularity_USAGE_GRANULARITY_CALL && pageSize == 7 && cq.pageQueries < len(want)/7 {
						t.Errorf("%s: %d page queries for %d calls", name, cq.pageQueries, len(want))
					}
				}
			}
		}
	}
}

// The charging rule is exercised by the fixture: rows with abandoned
// estimates, managed rows, and rows that differ only in managed exist.
func TestUsageFixtureCoversTheRule(t *testing.T) {
	t.Parallel()
	f := newUsageFixture(t)
	from, to := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	rows := refExportUsage(t, f.q, f.tenants, from, to, adminv1.UsageGranularity_USAGE_GRANULARITY_DAY)
	var noCalls, managed, flagged, ties int
	for i, r := range rows {
		if r.GetCalls() == 0 && r.GetCostNanos() > 0 {
			noCalls++
		}
		if r.GetManaged() {
			managed++
		}
		if r.GetEstimatedCostNanos() > 0 && r.GetCalls() > 0 {
			flagged++
		}
		if i > 0 {
			p := rows[i-1]
			if p.GetBucketStart().AsTime().Equal(r.GetBucketStart().AsTime()) && p.GetTenant() == r.GetTenant() && p.GetKey() == r.GetKey() &&
				p.GetRecord() == r.GetRecord() && p.GetMember() == r.GetMember() && p.GetModel() == r.GetModel() {
				ties++
			}
		}
	}
	if noCalls == 0 || managed == 0 || flagged == 0 || ties == 0 {
		t.Errorf("fixture rows: %d abandoned-only, %d managed, %d with estimates, %d managed ties; want some of each", noCalls, managed, flagged, ties)
	}
}

func TestExportUsageCallsReadsPages(t *testing.T) {
	t.Parallel()
	f := newUsageFixture(t)
	from, to := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	for _, pageSize := range []int{1, 10, 250} {
		for scope, tenants := range map[string][]sqlc.Tenant{"acme": {f.acme}, "all": f.tenants} {
			cq := &countingQueries{Queries: f.q}
			msgs := f.export(t, &UsageService{q: cq, pageSize: pageSize}, tenants, from, to, adminv1.UsageGranularity_USAGE_GRANULARITY_CALL)
			rows := 0
			for _, m := range msgs {
				rows += len(m.GetRows())
			}
			if scope == "all" && rows != f.calls {
				t.Errorf("page %d %s: %d rows, want %d", pageSize, scope, rows, f.calls)
			}
			if cq.maxPageRows > pageSize || cq.maxSumRows > pageSize {
				t.Errorf("page %d %s: a query read %d calls / %d attempt sums", pageSize, scope, cq.maxPageRows, cq.maxSumRows)
			}
			if min := rows / pageSize; cq.pageQueries < min || cq.sumQueries < min {
				t.Errorf("page %d %s: %d page and %d sum queries for %d calls", pageSize, scope, cq.pageQueries, cq.sumQueries, rows)
			}
		}
	}
}

func TestExportUsageStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	f := newUsageFixture(t)
	from, to := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	for _, g := range usageGranularities {
		cq := &countingQueries{Queries: f.q}
		ctx, cancel := context.WithCancel(context.Background())
		sent := 0
		err := (&UsageService{q: cq, pageSize: 10}).export(ctx, f.tenants, from, to, g, func(*adminv1.ExportUsageResponse) error {
			sent++
			cancel() // the client went away
			return nil
		})
		cancel()
		if connect.CodeOf(err) != connect.CodeCanceled || sent != 1 {
			t.Errorf("%s: export after the client went away = %v after %d messages, want Canceled after 1", g, err, sent)
		}
		if cq.afterCancel > 1 {
			t.Errorf("%s: %d queries after the client went away", g, cq.afterCancel)
		}
	}
}

// refUsageKey and refExportUsage are the export as it was before it ran in
// bounded memory: every call and attempt of the range in memory, aggregated
// in a map, sorted, cut into messages. The sort also orders by managed, last
// (rows that differ only in managed were in no particular order).
type refUsageKey struct {
	bucket                time.Time
	callID                string
	tenant, key           string
	record, member, model string
	managed               bool
}

func refExportUsage(t *testing.T, q *sqlc.Queries, tenants []sqlc.Tenant, from, to time.Time, gran adminv1.UsageGranularity) []*adminv1.UsageRow {
	t.Helper()
	ctx := context.Background()
	managed, err := q.ListProviderRecords(ctx, store.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	managedIDs := map[pgtype.UUID]bool{}
	managedNames := map[string]bool{}
	for _, r := range managed {
		managedIDs[r.ID] = true
		managedNames[r.Name] = true
	}
	rows := map[refUsageKey]*adminv1.UsageRow{}
	for _, tn := range tenants {
		if err := refCollect(ctx, q, tn, from, to, gran, managedIDs, managedNames, rows); err != nil {
			t.Fatal(err)
		}
	}
	keys := make([]refUsageKey, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	b := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	slices.SortFunc(keys, func(a, b2 refUsageKey) int {
		return cmp.Or(a.bucket.Compare(b2.bucket), cmp.Compare(a.callID, b2.callID), cmp.Compare(a.tenant, b2.tenant),
			cmp.Compare(a.key, b2.key), cmp.Compare(a.record, b2.record), cmp.Compare(a.member, b2.member), cmp.Compare(a.model, b2.model),
			cmp.Compare(b(a.managed), b(b2.managed)))
	})
	out := make([]*adminv1.UsageRow, 0, len(keys))
	for _, k := range keys {
		out = append(out, rows[k])
	}
	return out
}

func refCollect(ctx context.Context, q *sqlc.Queries, tn sqlc.Tenant, from, to time.Time, gran adminv1.UsageGranularity,
	managedIDs map[pgtype.UUID]bool, managedNames map[string]bool, rows map[refUsageKey]*adminv1.UsageRow) error {
	keys, err := q.ListAPIKeys(ctx, tn.ID)
	if err != nil {
		return err
	}
	keyNames := map[pgtype.UUID]string{}
	for _, k := range keys {
		keyNames[k.ID] = k.Name
	}
	calls, err := q.ListCallsBetween(ctx, sqlc.ListCallsBetweenParams{TenantID: tn.ID, FromTime: pgts(from), ToTime: pgts(to)})
	if err != nil {
		return err
	}
	attempts, err := q.ListCallAttemptsBetween(ctx, sqlc.ListCallAttemptsBetweenParams{TenantID: tn.ID, FromTime: pgts(from), ToTime: pgts(to)})
	if err != nil {
		return err
	}
	byCall := map[string][]sqlc.CallAttempt{}
	for _, a := range attempts {
		byCall[a.CallID] = append(byCall[a.CallID], a)
	}
	row := func(k refUsageKey) *adminv1.UsageRow {
		r, ok := rows[k]
		if !ok {
			r = &adminv1.UsageRow{
				BucketStart: ts(pgts(k.bucket)), CallId: k.callID, Tenant: k.tenant, Key: k.key,
				Record: k.record, Member: k.member, Managed: k.managed, Model: k.model,
			}
			rows[k] = r
		}
		return r
	}
	perCall := gran == adminv1.UsageGranularity_USAGE_GRANULARITY_CALL
	for _, c := range calls {
		k := refUsageKey{
			bucket: bucketStart(c.StartedAt.Time, gran), tenant: tn.Name, key: keyNames[c.KeyID],
			record: c.RecordName, member: c.MemberName, model: c.Model, managed: managedIDs[c.RecordID],
		}
		if perCall {
			k.callID = c.CallID
		}
		r := row(k)
		r.Calls++
		if c.Outcome != "answered" {
			r.FailedCalls++
		}
		r.InputTokens += c.InputTokens
		r.OutputTokens += c.OutputTokens
		r.CacheReadTokens += c.CacheReadTokens
		r.CacheWriteTokens += c.CacheWriteTokens
		r.CostNanos += c.CostNanos
		if c.CostFlagged {
			r.EstimatedCostNanos += c.CostNanos
		}
		as := byCall[c.CallID]
		for i, a := range as {
			if !a.CostEstimated || a.CostNanos == 0 || a.Outcome == "answered" {
				continue
			}
			if c.CostFlagged && i == len(as)-1 && a.RecordName == c.RecordName && a.MemberName == c.MemberName {
				continue // the call's own flagged estimate
			}
			ak := k
			if !perCall {
				ak.record, ak.member = a.RecordName, a.MemberName
				if a.RecordName != c.RecordName {
					ak.managed = managedNames[a.RecordName]
				}
			}
			ar := row(ak)
			ar.CostNanos += a.CostNanos
			ar.EstimatedCostNanos += a.CostNanos
		}
	}
	return nil
}
