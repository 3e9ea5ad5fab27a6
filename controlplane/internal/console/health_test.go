package console_test

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"
	"golang.org/x/net/html"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/proto/gen/weir/admin/v1/adminv1connect"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

// createPool creates a vLLM pool of tenant with one member per host (each
// "https://<host>/v1"), as the cluster admin, and returns the record.
func createPool(t *testing.T, h *harness, tenant, name string, members map[string]string) *adminv1.ProviderRecord {
	t.Helper()
	req := &adminv1.CreateProviderRequest{
		Tenant: tenant, Name: name, Preset: adminv1.Preset_PRESET_VLLM,
		Spec: &adminv1.ProviderSpec{Models: []*configv1.Model{{Name: "m"}}},
	}
	for m, host := range members {
		req.Members = append(req.Members, &adminv1.NewPoolMember{Name: m, Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://" + host + "/v1"}})
	}
	resp, err := h.API(cluster).Providers.CreateProvider(context.Background(), connect.NewRequest(req))
	if err != nil {
		t.Fatalf("create pool %s: %v", name, err)
	}
	return resp.Msg.GetRecord()
}

// seedView stores an edge's view of a member the way the control plane's
// view mirror does (distrib.ViewMirror.write: MirrorMemberView and
// MirrorEdge in one transaction), observed at mv.ObservedAt.
func seedView(t *testing.T, h *harness, rec *adminv1.ProviderRecord, mv *telemetryv1.MemberView) {
	t.Helper()
	ctx := context.Background()
	var id pgtype.UUID
	if err := id.Scan(rec.GetId()); err != nil {
		t.Fatal(err)
	}
	mv.RecordId, mv.RecordName = rec.GetId(), rec.GetName()
	raw, err := proto.Marshal(mv)
	if err != nil {
		t.Fatal(err)
	}
	at := pgtype.Timestamptz{Time: mv.GetObservedAt().AsTime(), Valid: true}
	err = h.Store.Tx(ctx, store.Actor{Name: "controlplane"}, func(tx *store.Tx) error {
		var errs []error
		tx.Q.MirrorMemberView(ctx, []sqlc.MirrorMemberViewParams{{
			EdgeID: mv.GetEdgeId(), RecordID: id, MemberName: mv.GetMemberName(), View: raw, ObservedAt: at,
		}}).Exec(func(_ int, err error) { errs = append(errs, err) })
		tx.Q.MirrorEdge(ctx, []sqlc.MirrorEdgeParams{{ID: mv.GetEdgeId(), LastSeen: at}}).Exec(func(_ int, err error) { errs = append(errs, err) })
		return errors.Join(errs...)
	})
	if err != nil {
		t.Fatalf("seed view: %v", err)
	}
}

// view is a member view of edge observed at `at`.
func view(edge, member string, at time.Time) *telemetryv1.MemberView {
	return &telemetryv1.MemberView{
		EdgeId: edge, MemberName: member, ObservedAt: timestamppb.New(at), Headroom: 0.9,
		Dimensions: []*telemetryv1.DimensionView{
			{Dimension: telemetryv1.Dimension_DIMENSION_REQUESTS, Limit: 100, Remaining: 90, Source: telemetryv1.HeadroomSource_HEADROOM_SOURCE_HEADERS},
			{Dimension: telemetryv1.Dimension_DIMENSION_INPUT_TOKENS, Limit: 10000, Remaining: 2500},
		},
		LastStatus: 200, LastStatusAt: timestamppb.New(at.Add(-3 * time.Second)), InFlight: 2,
		Counters: map[string]uint64{"answered": 7},
	}
}

func cooling(mv *telemetryv1.MemberView, until time.Time, reason string) *telemetryv1.MemberView {
	mv.Cooldown = &telemetryv1.Cooldown{Until: timestamppb.New(until), Kind: telemetryv1.FailureKind_FAILURE_KIND_RATE_LIMITED, Reason: reason}
	mv.LastStatus = 429
	return mv
}

// within returns the one element with data-testid id inside n.
func within(t *testing.T, n *html.Node, id string) *html.Node {
	t.Helper()
	return find(t, n, id)
}

func TestHealthPage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	now := h.Clock.Now()
	p := createPool(t, h, "a", "p", map[string]string{"m1": "one.example.com", "m2": "two.example.com"})
	// q's members share a host: the doctor reports shared_account.
	createPool(t, h, "a", "q", map[string]string{"x": "same.example.com", "y": "same.example.com:8443"})
	seedView(t, h, p, cooling(view("edge-1", "m1", now), now.Add(5*time.Minute), "429 from upstream: slow down"))
	mv2 := view("edge-1", "m2", now)
	mv2.Spent = true
	seedView(t, h, p, mv2)
	seedView(t, h, p, view("edge-2", "m1", now.Add(-5*time.Minute))) // edge-2 stopped reporting

	b := h.login(t, tadmA)
	doc := b.page(t, "/console/", http.StatusOK)
	if got := attr(find(t, doc, "nav-health"), "aria-current"); got != "page" {
		t.Errorf("nav-health aria-current = %q", got)
	}
	live := find(t, doc, "health-live")
	if got := attr(live, "data-live"); got != "/console/health/events" {
		t.Errorf("data-live = %q", got)
	}
	// (The parser reads <noscript> as text, as a browser with scripts does.)
	if !strings.Contains(string(b.Last), `data-testid="health-noscript"`) {
		t.Error("no <noscript> hint")
	}
	rec := find(t, doc, "health-record-p")
	find(t, rec, "health-grid-p")
	find(t, doc, "health-record-q")

	cell := find(t, doc, "health-cell-p-m1-edge-1")
	if got := attr(cell, "data-state"); got != "cooling" {
		t.Errorf("m1@edge-1 state = %q, want cooling", got)
	}
	if got := attr(within(t, cell, "cell-state"), "data-state"); got != "cooling" {
		t.Errorf("cell-state = %q", got)
	}
	cd := within(t, cell, "cooldown-countdown")
	until, err := time.Parse(time.RFC3339, attr(cd, "data-countdown-until"))
	if err != nil || until.Sub(now) < 4*time.Minute || until.Sub(now) > 6*time.Minute {
		t.Errorf("countdown until %q (err %v)", attr(cd, "data-countdown-until"), err)
	}
	if txt := text(cd); !strings.Contains(txt, "m ") {
		t.Errorf("countdown text %q", txt)
	}
	if title := attr(within(t, cell, "cooldown"), "title"); !strings.Contains(title, "rate_limited") || !strings.Contains(title, "slow down") {
		t.Errorf("cooldown title %q", title)
	}
	if got := text(within(t, cell, "cooldown-kind")); got != "rate_limited" {
		t.Errorf("cooldown kind %q", got)
	}
	if got := text(within(t, cell, "last-status")); got != "429" {
		t.Errorf("last status %q", got)
	}
	if got := text(within(t, cell, "last-status-age")); got != "3s ago" && got != "4s ago" {
		t.Errorf("last status age %q", got)
	}
	if got := attr(within(t, cell, "in-flight"), "data-in-flight"); got != "2" {
		t.Errorf("in flight %q", got)
	}
	meter := first(within(t, cell, "headroom-requests"), func(n *html.Node) bool { return n.Data == "meter" })
	if meter == nil || attr(meter, "max") != "100" || attr(meter, "value") != "90" {
		t.Errorf("requests meter: %v", meter)
	}
	find(t, cell, "headroom-input-tokens")

	spent := find(t, doc, "health-cell-p-m2-edge-1")
	if got := attr(spent, "data-state"); got != "spent" {
		t.Errorf("m2@edge-1 state = %q, want spent", got)
	}
	find(t, spent, "mark-spent")

	silent := find(t, doc, "health-cell-p-m1-edge-2")
	if got := attr(silent, "data-state"); got != "silent" || !strings.Contains(attr(silent, "class"), "stale") {
		t.Errorf("m1@edge-2 state %q class %q, want silent and greyed", got, attr(silent, "class"))
	}
	if got := attr(find(t, doc, "health-cell-p-m2-edge-2"), "data-state"); got != "silent" {
		t.Errorf("m2@edge-2 (no view, silent edge) state = %q", got)
	}
	edge2 := find(t, doc, "health-edge-p-edge-2")
	if attr(edge2, "data-silent") != "true" || !strings.Contains(attr(edge2, "class"), "stale") {
		t.Errorf("edge-2 header: %v", edge2.Attr)
	}
	if attr(find(t, doc, "health-edge-p-edge-1"), "data-silent") != "false" {
		t.Error("edge-1 marked silent")
	}
	if got := attr(find(t, doc, "health-cell-q-x-edge-1"), "data-state"); got != "unknown" {
		t.Errorf("q/x@edge-1 (no view) state = %q", got)
	}

	codes := map[string]bool{}
	for _, f := range findAll(doc, "doctor-finding") {
		codes[attr(f, "data-code")] = true
	}
	if !codes["shared_account"] {
		t.Errorf("doctor findings %v, want shared_account", codes)
	}
	if has(doc, "doctor-ok") {
		t.Error("doctor-ok shown with findings")
	}

	// Reset m1: the API records it (R-OBS-4) and the page says so.
	find(t, doc, "reset-p-m1")
	doc = b.submit(t, "/console/health/reset", url.Values{"record": {"p"}, "member": {"m1"}, "scope": {""}}, http.StatusOK)
	if got := text(find(t, doc, "flash-ok")); !strings.Contains(got, "m1") || !strings.Contains(got, "Reset") {
		t.Errorf("flash %q", got)
	}
	if n := resets(t, h, "a", "m1"); n != 1 {
		t.Errorf("%d resets of m1 audited, want 1", n)
	}

	// Every member off → state off where the edge has no view.
	if _, err := h.API(cluster).Pools.UpdatePoolMember(context.Background(), connect.NewRequest(&adminv1.UpdatePoolMemberRequest{
		Tenant: "a", Record: "q", Member: "x", Spec: &adminv1.PoolMemberSpec{Off: true}, UpdateMask: fieldMask("off"),
	})); err != nil {
		t.Fatal(err)
	}
	doc = b.page(t, "/console/", http.StatusOK)
	if got := attr(find(t, doc, "health-cell-q-x-edge-1"), "data-state"); got != "off" {
		t.Errorf("q/x@edge-1 state = %q, want off", got)
	}
	find(t, find(t, doc, "health-member-q-x"), "member-off-mark")
}

func TestHealthPoolCooling(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	now := h.Clock.Now()
	p := createPool(t, h, "a", "p", map[string]string{"m1": "one.example.com", "m2": "two.example.com"})
	seedView(t, h, p, cooling(view("edge-1", "m1", now), now.Add(time.Minute), "429"))
	seedView(t, h, p, cooling(view("edge-1", "m2", now), now.Add(2*time.Minute), "429"))
	doc := h.login(t, tadmA).page(t, "/console/", http.StatusOK)
	var found bool
	for _, f := range findAll(doc, "doctor-finding") {
		if attr(f, "data-code") == "pool_cooling" {
			found = true
			if attr(f, "data-severity") != "error" {
				t.Errorf("pool_cooling severity %q", attr(f, "data-severity"))
			}
		}
	}
	if !found {
		t.Errorf("no pool_cooling finding:\n%s", b2s(findAll(doc, "doctor-finding")))
	}
}

func TestHealthTenantIsolation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	now := h.Clock.Now()
	p := createPool(t, h, "a", "p", map[string]string{"m1": "one.example.com"})
	seedView(t, h, p, view("edge-1", "m1", now))

	b := h.login(t, tadmB)
	doc := b.page(t, "/console/", http.StatusOK)
	if has(doc, "health-record-p") || has(doc, "health-cell-p-m1-edge-1") || has(doc, "reset-p-m1") {
		t.Error("tenant b sees tenant a's pool")
	}
	find(t, doc, "health-empty")
	// The stream does not carry it either.
	if ev := firstEvent(t, b, "/console/health/events"); strings.Contains(ev, "health-record-p") {
		t.Error("tenant b's stream carries tenant a's pool")
	}
	// Resetting a's member as b is refused, by tenant or as managed.
	for _, scope := range []string{"", "managed"} {
		doc = b.submit(t, "/console/health/reset", url.Values{"record": {"p"}, "member": {"m1"}, "scope": {scope}}, http.StatusOK)
		find(t, doc, "flash-error")
	}
	// And a tenant admin of b cannot look at a's data with ?tenant=a.
	doc = b.page(t, "/console/?tenant=a", http.StatusOK)
	if has(doc, "health-record-p") {
		t.Error("?tenant=a shows tenant a's pool to tenant b's admin")
	}
	if n := resets(t, h, "a", "m1"); n != 0 {
		t.Errorf("%d resets audited, want 0", n)
	}

	// The cluster admin sees a's pool (tenant a is its first tenant).
	doc = h.login(t, cluster).page(t, "/console/?tenant=a", http.StatusOK)
	find(t, doc, "health-cell-p-m1-edge-1")
}

func TestHealthEvents(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	now := h.Clock.Now()
	p := createPool(t, h, "a", "p", map[string]string{"m1": "one.example.com"})
	seedView(t, h, p, view("edge-1", "m1", now))
	b := h.login(t, tadmA)

	// Not signed in: no stream.
	if resp := h.browser(t).get(t, "/console/health/events"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("events without a session: status %d", resp.StatusCode)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL+"/console/health/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if csp := resp.Header.Get("Content-Security-Policy"); csp == "" {
		t.Error("no CSP on the stream")
	}
	events := sseEvents(resp)

	state := func(ev sse) string {
		doc, err := html.Parse(strings.NewReader(ev.data))
		if err != nil {
			t.Fatal(err)
		}
		cells := findAll(doc, "health-cell-p-m1-edge-1")
		if len(cells) != 1 {
			return ""
		}
		return attr(cells[0], "data-state")
	}
	next := func() sse {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the stream ended")
			}
			return ev
		case <-ctx.Done():
			t.Fatal("no event in time")
		}
		return sse{}
	}
	ev := next()
	if !ev.comment {
		t.Errorf("first frame %+v, want the opening comment", ev)
	}
	for ev = next(); ev.comment; ev = next() {
	}
	if got := state(ev); got != "healthy" {
		t.Fatalf("first event: state %q, want healthy\n%s", got, ev.data)
	}
	if !strings.Contains(ev.data, `data-testid="health-record-p"`) || strings.Contains(ev.data, "<html") {
		t.Errorf("the event is not the grid fragment:\n%s", ev.data)
	}

	// The view changes: the stream sends the grid again, cooling, within a
	// few polls.
	seedView(t, h, p, cooling(view("edge-1", "m1", now.Add(time.Second)), now.Add(3*time.Minute), "429 rate limited"))
	deadline := time.After(10 * time.Second)
	for {
		select {
		case <-deadline:
			t.Fatal("no cooling event within 10s")
		default:
		}
		ev = next()
		if ev.comment {
			continue
		}
		if got := state(ev); got == "cooling" {
			if !strings.Contains(ev.data, `data-testid="cooldown-countdown"`) {
				t.Errorf("cooling event without a countdown:\n%s", ev.data)
			}
			break
		}
	}
	cancel()
}

// sse is one frame of an event stream: a message's data, or a comment.
type sse struct {
	data    string
	comment bool
}

// sseEvents reads frames from an event stream until it ends.
func sseEvents(resp *http.Response) <-chan sse {
	out := make(chan sse, 16)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		var data []string
		comment := false
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if len(data) > 0 || comment {
					out <- sse{data: strings.Join(data, "\n"), comment: comment && len(data) == 0}
				}
				data, comment = nil, false
			case strings.HasPrefix(line, ":"):
				comment = true
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimPrefix(line, "data:"))
			}
		}
	}()
	return out
}

// firstEvent returns the data of the first message of the stream at path.
func firstEvent(t *testing.T, b *browser, path string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.h.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for ev := range sseEvents(resp) {
		if !ev.comment {
			return ev.data
		}
	}
	t.Fatal("the stream ended without a message")
	return ""
}

// resets counts the audited resets of member in tenant's records.
func resets(t *testing.T, h *harness, tenant, member string) int {
	t.Helper()
	hc := &http.Client{Transport: bearerRT{token: h.Tokens[cluster], rt: h.transport}, Timeout: time.Minute}
	audit := adminv1connect.NewAuditServiceClient(hc, h.URL)
	resp, err := audit.ListAuditEvents(context.Background(), connect.NewRequest(&adminv1.ListAuditEventsRequest{Tenant: tenant, PageSize: 1000}))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range resp.Msg.GetEvents() {
		if strings.HasSuffix(e.GetProcedure(), "/ResetPoolMember") && strings.HasSuffix(e.GetTarget(), "/"+member) {
			n++
		}
	}
	return n
}

func b2s(ns []*html.Node) string {
	var parts []string
	for _, n := range ns {
		parts = append(parts, attr(n, "data-code")+": "+text(n))
	}
	return strings.Join(parts, "\n")
}

// TestHealthEventsEndOnShutdown: a server that begins to shut down ends the
// live stream at once instead of waiting for the browser to leave.
func TestHealthEventsEndOnShutdown(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := createPool(t, h, "a", "p", map[string]string{"m1": "one.example.com"})
	seedView(t, h, p, view("edge-1", "m1", h.Clock.Now()))
	b := h.login(t, tadmA)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL+"/console/health/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := sseEvents(resp)
	for ev := range events {
		if !ev.comment {
			break // the grid arrived: the stream is live
		}
	}
	h.Stop()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the stream is still open 5s after the server began to shut down")
		}
	}
}
