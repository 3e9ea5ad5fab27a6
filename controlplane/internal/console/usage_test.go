package console_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"weir.dev/db/sqlc"
)

// usageCSVHeader is `weir usage export`'s CSV header.
const usageCSVHeader = "bucket_start,call_id,tenant,key,record,member,managed,model,calls,failed_calls,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,cost_usd,estimated_cost_usd"

func seedUsage(t *testing.T, h *harness, now time.Time) {
	t.Helper()
	seedCalls(t, h,
		seededCall{tenant: "a", id: "u1", key: "app", model: "gpt-x", record: "gpt", member: "eu1", status: 200, outcome: "answered", cost: 1000, start: now.Add(-5 * time.Hour)},
		seededCall{tenant: "a", id: "u2", key: "app", model: "gpt-x", record: "gpt", member: "eu1", status: 200, outcome: "answered", cost: 2000, start: now.Add(-3 * time.Hour)},
		seededCall{tenant: "a", id: "u3", key: "app", model: "gpt-x", record: "gpt", member: "eu1", status: 200, outcome: "answered", cost: 3000, start: now.Add(-90 * time.Minute)},
		seededCall{tenant: "a", id: "u4", key: "app", model: "gpt-x", record: "gpt", member: "us1", status: 200, outcome: "answered", cost: 500, start: now.Add(-3 * time.Hour)},
		seededCall{tenant: "a", id: "u5", key: "ops", model: "gpt-x", record: "gpt", member: "us1", status: 502, outcome: "failed", cost: 700, start: now.Add(-20 * time.Minute),
			attempts: []sqlc.InsertCallAttemptParams{{RecordName: "gpt", MemberName: "us1", Status: 502, Outcome: "failed", Kind: "server_error", CostNanos: 700}}},
		seededCall{tenant: "b", id: "ub", key: "bapp", model: "gpt-x", record: "gpt", member: "b1", status: 200, outcome: "answered", cost: 99, start: now.Add(-time.Hour)},
	)
}

func TestUsagePage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	now := time.Now().UTC()
	seedUsage(t, h, now)
	b := h.login(t, tadmA)

	for _, path := range []string{"/console/usage?range=24h", "/console/usage"} {
		doc := b.page(t, path, http.StatusOK)
		// One series per member, with the right totals, in both charts.
		for chart, want := range map[string]map[string]string{
			"chart-usage-cost":  {"gpt/eu1": "6000", "gpt/us1": "1200"},
			"chart-usage-calls": {"gpt/eu1": "3", "gpt/us1": "2"},
		} {
			c := find(t, doc, chart)
			got := map[string]string{}
			for _, s := range findAll(c, "chart-series") {
				got[attr(s, "data-series")] = attr(s, "data-total")
				for _, bar := range findAll(s, "chart-bar") {
					if first(bar, func(n *htmlNode) bool { return n.Data == "title" }) == nil {
						t.Errorf("%s: a bar without a title", chart)
					}
				}
			}
			if len(got) != len(want) || got["gpt/eu1"] != want["gpt/eu1"] || got["gpt/us1"] != want["gpt/us1"] {
				t.Errorf("%s %s: series %v, want %v", path, chart, got, want)
			}
			if len(findAll(c, "legend-item")) != 2 || len(findAll(c, "chart-ytick")) < 2 || len(findAll(c, "chart-xtick")) < 1 {
				t.Errorf("%s %s: legend or axes missing", path, chart)
			}
			svg := find(t, c, "chart-svg")
			if attr(svg, "role") != "img" || attr(svg, "aria-labelledby") == "" {
				t.Errorf("%s: svg not labelled", chart)
			}
		}
		cost := find(t, doc, "chart-usage-cost")
		if got := text(findAll(cost, "legend-total")[0]); got != "$0.000006" {
			t.Errorf("eu1 legend total %q", got)
		}
		if got := text(find(t, doc, "usage-total-cost")); got != "$0.0000072" {
			t.Errorf("total cost %q", got)
		}
		if got := text(find(t, doc, "usage-total-calls")); got != "5" {
			t.Errorf("total calls %q", got)
		}
		rows := findAll(doc, "usage-member")
		if len(rows) != 2 || attr(rows[0], "data-member") != "gpt/eu1" || text(find(t, rows[1], "usage-member-failed")) != "1" {
			t.Errorf("member rows %d", len(rows))
		}
		if has(doc, "usage-capped") {
			t.Error("capped with 5 rows")
		}
		if strings.Contains(string(b.Last), "b1") {
			t.Error("tenant b's member on tenant a's page")
		}
	}
	doc := b.page(t, "/console/usage?range=24h", http.StatusOK)
	if got := text(find(t, doc, "usage-period")); !strings.Contains(got, "per hour") {
		t.Errorf("24h period %q", got)
	}
	if attr(find(t, doc, "usage-preset-24h"), "aria-current") != "true" {
		t.Error("24h preset not current")
	}
	// 24 hour buckets: at most 8 x labels, bars only where calls were.
	if n := len(findAll(find(t, doc, "chart-usage-calls"), "chart-bar")); n != 5 {
		t.Errorf("%d call bars, want 5 (u1; u2 and u4 share an hour; u3; u5)", n)
	}
	doc = b.page(t, "/console/usage?range=30d", http.StatusOK)
	if got := text(find(t, doc, "usage-period")); !strings.Contains(got, "per day") {
		t.Errorf("30d period %q", got)
	}

	// Custom ranges, and their problems next to the fields.
	day := now.Format(time.DateOnly)
	doc = b.page(t, "/console/usage?from="+day+"&to="+day, http.StatusOK)
	if attr(find(t, doc, "input-from"), "value") != day {
		t.Error("custom from not kept")
	}
	doc = b.page(t, "/console/usage?from=2026-13-01&to="+day, http.StatusUnprocessableEntity)
	find(t, doc, "problem-from")
	doc = b.page(t, "/console/usage?from=2026-03-02&to=2026-03-01", http.StatusUnprocessableEntity)
	find(t, doc, "problem-to")
	doc = b.page(t, "/console/usage?from=2024-01-01&to=2026-01-01", http.StatusUnprocessableEntity)
	find(t, doc, "problem-to")

	// Tenant b sees only its own usage.
	other := h.login(t, tadmB)
	doc = other.page(t, "/console/usage?range=24h&tenant=a", http.StatusOK)
	if rows := findAll(doc, "usage-member"); len(rows) != 1 || attr(rows[0], "data-member") != "gpt/b1" {
		t.Errorf("tenant b's usage rows %d", len(rows))
	}
}

func TestUsageExport(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	now := time.Now().UTC()
	seedUsage(t, h, now)
	b := h.login(t, costA)
	doc := b.page(t, "/console/usage?range=24h", http.StatusOK)

	// One line per call.
	link := attr(find(t, doc, "usage-export-calls-csv"), "href")
	resp := b.get(t, link)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("export: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), b.Last)
	}
	if cd := resp.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, `attachment; filename="weir-usage-a-`) || !strings.HasSuffix(cd, `-call.csv"`) {
		t.Errorf("Content-Disposition %q", cd)
	}
	recs, err := csv.NewReader(bytes.NewReader(b.Last)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(recs[0], ",") != usageCSVHeader {
		t.Errorf("header %v", recs[0])
	}
	var ids []string
	for _, r := range recs[1:] {
		ids = append(ids, r[1]+":"+r[5]+":"+r[14])
		if r[2] != "a" {
			t.Errorf("row of tenant %s", r[2])
		}
	}
	sort.Strings(ids)
	if got := strings.Join(ids, ","); got != "u1:eu1:0.000001,u2:eu1:0.000002,u3:eu1:0.000003,u4:us1:0.0000005,u5:us1:0.0000007" {
		t.Errorf("rows %s", got)
	}

	// The chart's buckets, as CSV and JSON.
	resp = b.get(t, attr(find(t, doc, "usage-export-csv"), "href"))
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(b.Last), usageCSVHeader+"\n") {
		t.Fatalf("bucket export: %d\n%s", resp.StatusCode, b.Last)
	}
	resp = b.get(t, attr(find(t, doc, "usage-export-json"), "href"))
	var rows []map[string]any
	if err := json.Unmarshal(b.Last, &rows); err != nil || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("json export: %v\n%s", err, b.Last)
	}
	var calls float64
	for _, r := range rows {
		c := fmt.Sprint(r["calls"]) // a JSON number (once a protojson string)
		if c == "1" {
			calls++
		} else if c == "2" {
			calls += 2
		}
	}
	if calls != 5 {
		t.Errorf("json rows count %v calls", calls)
	}

	// Refused exports are error pages, not downloads.
	resp = b.get(t, "/console/usage/export.csv?granularity=week")
	if resp.StatusCode != http.StatusUnprocessableEntity || resp.Header.Get("Content-Disposition") != "" {
		t.Errorf("bad granularity: %d %q", resp.StatusCode, resp.Header.Get("Content-Disposition"))
	}
	other := h.login(t, tadmB)
	resp = other.get(t, strings.Replace(link, "tenant=a", "tenant=b", 1))
	recs, err = csv.NewReader(bytes.NewReader(other.Last)).ReadAll()
	if err != nil || resp.StatusCode != http.StatusOK || len(recs) != 2 || recs[1][1] != "ub" {
		t.Errorf("tenant b's export: %d %v %v", resp.StatusCode, recs, err)
	}
}

// Calls no member was sent (refused at the edge) have usage rows that name
// no record and no member: the charts' legends and the member table name
// them for what they are, never as a bare "/", and list them last.
func TestUsageNotSentCalls(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	now := time.Now().UTC()
	seedCalls(t, h,
		seededCall{tenant: "a", id: "u1", key: "app", model: "gpt-x", record: "gpt", member: "eu1", status: 200, outcome: "answered", cost: 1000, start: now.Add(-2 * time.Hour)},
		seededCall{tenant: "a", id: "r1", key: "app", model: "gpt-x", status: 402, outcome: "refused", errorCode: "weir_budget_exceeded", start: now.Add(-time.Hour),
			attempts: []sqlc.InsertCallAttemptParams{}},
		seededCall{tenant: "a", id: "r2", key: "app", model: "gpt-x", status: 503, outcome: "refused", errorCode: "weir_pool_cooling", start: now.Add(-time.Hour),
			attempts: []sqlc.InsertCallAttemptParams{}},
		seededCall{tenant: "a", id: "r3", key: "app", model: "gpt-x", status: 503, outcome: "refused", errorCode: "weir_no_route", start: now.Add(-time.Hour),
			attempts: []sqlc.InsertCallAttemptParams{}},
	)
	b := h.login(t, tadmA)
	doc := b.page(t, "/console/usage?range=24h", http.StatusOK)
	const label = "not sent to a member (refused or cancelled at the edge)"
	calls := find(t, doc, "chart-usage-calls")
	var labels []string
	for _, it := range findAll(calls, "legend-item") {
		labels = append(labels, text(find(t, it, "legend-label")))
	}
	if got := strings.Join(labels, "|"); got != "gpt/eu1|"+label {
		t.Errorf("calls legend %q", got)
	}
	for _, s := range findAll(calls, "chart-series") {
		if attr(s, "data-series") != "gpt/eu1" && attr(s, "data-total") != "3" {
			t.Errorf("not-sent series %q totals %s calls, want 3", attr(s, "data-series"), attr(s, "data-total"))
		}
	}
	for _, it := range findAll(doc, "legend-label") {
		if l := text(it); l == "/" || strings.HasPrefix(l, "/") || strings.HasSuffix(l, "/") {
			t.Errorf("legend label %q", l)
		}
	}
	rows := findAll(doc, "usage-member")
	if len(rows) != 2 || text(find(t, rows[1], "usage-member-label")) != label || text(find(t, rows[1], "usage-member-calls")) != "3" {
		t.Errorf("member table: %d rows, last %q", len(rows), text(rows[len(rows)-1]))
	}
	for _, bar := range findAll(calls, "chart-bar") {
		if title := text(first(bar, func(n *htmlNode) bool { return n.Data == "title" })); strings.HasPrefix(title, "/ ") {
			t.Errorf("bar title %q", title)
		}
	}
}

// TestUsageExportNeutralisesFormulas: a caller-chosen model name, an
// edge-given call id and names starting with '-' reach the CSV exports
// (one line per call, and per day) only neutralised: no cell starts with
// '=', '+', '-', '@', a tab or a carriage return (DESIGN §5).
func TestUsageExportNeutralisesFormulas(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	now := time.Now().UTC()
	seedCalls(t, h,
		seededCall{tenant: "a", id: "@call", key: "-key", model: `=HYPERLINK("http://evil.example","x")`, record: "-rec", member: "-m", status: 200, outcome: "answered", cost: 1000, start: now.Add(-time.Hour)},
		seededCall{tenant: "a", id: "+call", key: "-key", model: "+1+1", record: "-rec", member: "-m", status: 200, outcome: "answered", cost: 1000, start: now.Add(-time.Hour)},
		seededCall{tenant: "a", id: "\tcall", key: "-key", model: "\r@SUM(A1)", record: "-rec", member: "-m", status: 200, outcome: "answered", cost: 1000, start: now.Add(-time.Hour)},
	)
	b := h.login(t, costA)
	for _, g := range []string{"call", "day"} {
		resp := b.get(t, "/console/usage/export.csv?tenant=a&range=24h&granularity="+g)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s export: %d\n%s", g, resp.StatusCode, b.Last)
		}
		recs, err := csv.NewReader(bytes.NewReader(b.Last)).ReadAll()
		if err != nil || len(recs) < 2 {
			t.Fatalf("%s export: %v, %d lines\n%s", g, err, len(recs), b.Last)
		}
		models := 0
		for _, r := range recs[1:] {
			for i, cell := range r {
				if cell != "" && strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
					t.Errorf("%s export: %s cell %q is not neutralised", g, recs[0][i], cell)
				}
			}
			if strings.HasPrefix(r[7], "'") {
				models++
			}
		}
		if models != 3 {
			t.Errorf("%s export: %d neutralised model cells, want 3\n%s", g, models, b.Last)
		}
	}
}
