package console

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"slices"
	"sort"
	"time"

	"connectrpc.com/connect"

	"weir.dev/controlplane/internal/words"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing/formats"
	"weir.dev/routing/rules"
	"weir.dev/web"
)

// healthPage is the pool health page, the console's home (/console/): the
// grid, its live stream and the member reset.
type healthPage struct{ *base }

// The health stream's timing: the API is polled every healthPoll; a
// comment goes out when nothing was sent for healthKeepAlive (so proxies
// keep the connection); a stream ends after healthMaxLife (EventSource
// reconnects, and the session is checked again).
const (
	healthPoll      = time.Second
	healthKeepAlive = 15 * time.Second
	healthMaxLife   = 30 * time.Minute
	// healthSlowEvery is how often the records (and their members' off
	// switches) and the doctor's findings are read again; views and edges
	// are read on every poll.
	healthSlowEvery = 5 * time.Second
)

// show is the pool health page (the console's home): the current
// tenant's records (and, for cluster admins, the managed ones), each a
// grid of members × edges from the edges' views (R-OBS-1), the doctor's
// findings above, live over /console/health/events.
func (c healthPage) show(w http.ResponseWriter, r *http.Request, s *session) {
	src := newHealthSource(c.base, s)
	v, err := src.load(r.Context())
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v.Live = "/console/health/events"
	c.page(w, r, s, http.StatusOK, "Pool health", "health", web.HealthPage(v))
}

// events streams the health grid as server-sent events: one "message"
// event, whose data is the rendered web.HealthGrid, first and then whenever
// what it shows changes (countdowns and ages tick in the browser), polling
// the API every healthPoll, with a keep-alive comment when idle. It stops
// when the client goes away, when the session's token is refused, or after
// healthMaxLife.
func (c healthPage) events(w http.ResponseWriter, r *http.Request, s *session) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// A retry hint and a first comment, so the browser sees the stream open
	// before the first poll answers.
	if _, err := w.Write([]byte("retry: 3000\n: weir health stream\n\n")); err != nil {
		return
	}
	if err := rc.Flush(); err != nil {
		return
	}
	ctx := r.Context()
	src := newHealthSource(c.base, s)
	end := time.NewTimer(healthMaxLife)
	defer end.Stop()
	tick := time.NewTicker(healthPoll)
	defer tick.Stop()
	var last [sha256.Size]byte
	sentAt := time.Now()
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-end.C:
				return
			case <-c.d.Stopping:
				return
			case <-tick.C:
			}
		}
		pollCtx, cancel := context.WithTimeout(ctx, apiTimeout)
		v, err := src.load(pollCtx)
		cancel()
		if err != nil {
			if ctx.Err() != nil || connect.CodeOf(err) == connect.CodeUnauthenticated || connect.CodeOf(err) == connect.CodePermissionDenied {
				return
			}
			c.d.Log.Warn("console: health stream", "err", err)
			continue
		}
		key, err := healthKey(ctx, v)
		if err != nil {
			c.d.Log.Error("console: health stream render", "err", err)
			return
		}
		var msg []byte
		switch {
		case key != last:
			var buf bytes.Buffer
			if err := web.HealthGrid(v).Render(ctx, &buf); err != nil {
				c.d.Log.Error("console: health stream render", "err", err)
				return
			}
			msg = sseData(buf.Bytes())
			last = key
		case time.Since(sentAt) >= healthKeepAlive:
			msg = []byte(": keep-alive\n\n")
		default:
			continue
		}
		if _, err := w.Write(msg); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		sentAt = time.Now()
	}
}

// healthKey identifies what the grid shows apart from the clock: the grid
// rendered as of a fixed time, hashed. States are computed before
// rendering, so a cooldown that ends changes the key.
func healthKey(ctx context.Context, v web.HealthView) ([sha256.Size]byte, error) {
	v.Now = time.Unix(0, 0).UTC()
	h := sha256.New()
	if err := web.HealthGrid(v).Render(ctx, h); err != nil {
		return [sha256.Size]byte{}, err
	}
	var out [sha256.Size]byte
	copy(out[:], h.Sum(nil))
	return out, nil
}

// sseData frames an HTML fragment as one SSE message: a "data:" line per
// line of it.
func sseData(frag []byte) []byte {
	var b bytes.Buffer
	for _, line := range bytes.Split(bytes.TrimRight(frag, "\n"), []byte("\n")) {
		b.WriteString("data: ")
		b.Write(bytes.TrimRight(line, "\r"))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// resetMember resets a member on every edge (R-OBS-4) and comes back to
// the health page with a flash.
func (c healthPage) resetMember(w http.ResponseWriter, r *http.Request, s *session) {
	record, member := r.PostFormValue("record"), r.PostFormValue("member")
	tenant := s.tenant
	if r.PostFormValue("scope") == web.ScopeManaged {
		tenant = ""
	}
	next := safeNext(r.PostFormValue("next"))
	_, err := s.api.Pools.ResetPoolMember(r.Context(), connect.NewRequest(&adminv1.ResetPoolMemberRequest{
		Tenant: tenant, Record: record, Member: member,
	}))
	if err != nil {
		if connect.CodeOf(err) == connect.CodeUnauthenticated {
			c.fail(w, r, s, err)
			return
		}
		p, _ := problemsOf(err)
		c.redirect(w, r, next, web.Flash{Kind: web.FlashError, Text: "Member " + member + " of " + record + " was not reset: " + p.Message})
		return
	}
	c.redirect(w, r, next, web.Flash{Kind: web.FlashOK,
		Text: "Reset of member " + member + " of " + record + " sent to every edge: its cooldown, spent mark and disable are cleared."})
}

// healthScope is one owner whose records the page shows.
type healthScope struct {
	tenant string // "" for managed records
	scope  string // "" or web.ScopeManaged
}

// healthSource reads what the health page shows, through the session's API
// clients. The records and the doctor's findings are read again only every
// healthSlowEvery (they change rarely and cost more); views and edges on
// every load.
type healthSource struct {
	c      *base
	s      *session
	scopes []healthScope

	slowAt        time.Time
	records       map[string][]healthRecord // by scope
	findings      []web.Finding
	findingsError string
}

// healthRecord is a record with its members in order and which are off.
type healthRecord struct {
	name    string
	pool    bool
	members []string
	off     map[string]bool
}

func newHealthSource(c *base, s *session) *healthSource {
	src := &healthSource{c: c, s: s}
	if s.tenant != "" {
		src.scopes = append(src.scopes, healthScope{tenant: s.tenant})
	}
	if s.cluster {
		src.scopes = append(src.scopes, healthScope{scope: web.ScopeManaged})
	}
	return src
}

// load returns the page's data as of now.
func (src *healthSource) load(ctx context.Context) (web.HealthView, error) {
	now := src.c.now()
	v := web.HealthView{Now: now, CSRF: src.s.csrf, Tenant: src.s.tenant, CanReset: canChange(src.s, src.s.tenant) || src.s.cluster}
	if err := src.refreshSlow(ctx); err != nil {
		return v, err
	}
	v.Findings, v.FindingsError = src.findings, src.findingsError

	edges, err := listEdges(ctx, src.s.api, src.s.tenant)
	if err != nil {
		return v, err
	}
	edgeIdx := map[string]int{}
	for _, e := range edges {
		edgeIdx[e.GetId()] = len(v.Edges)
		v.Edges = append(v.Edges, web.HealthEdge{ID: e.GetId(), Silent: e.GetSilent(), LastSeen: e.GetLastSeenAt().AsTime()})
	}
	for _, sc := range src.scopes {
		if err := src.addScope(ctx, &v, edgeIdx, sc, now); err != nil {
			return v, err
		}
	}
	// A record seen before the last edge column was added has too few
	// cells: pad them (no view).
	for i := range v.Records {
		for j := range v.Records[i].Members {
			hm := &v.Records[i].Members[j]
			for k := len(hm.Cells); k < len(v.Edges); k++ {
				hm.Cells = append(hm.Cells, cellOf(nil, v.Edges[k], hm.Off, now))
			}
		}
	}
	return v, nil
}

// refreshSlow reads the records of every scope and the doctor's findings
// again when they were never read or were read healthSlowEvery ago or
// more. On an error it keeps what it had.
func (src *healthSource) refreshSlow(ctx context.Context) error {
	if src.records != nil && time.Since(src.slowAt) < healthSlowEvery {
		return nil
	}
	recs := map[string][]healthRecord{}
	for _, sc := range src.scopes {
		rs, err := loadHealthRecords(ctx, src.s.api, sc.tenant)
		if err != nil {
			return err
		}
		recs[sc.scope] = rs
	}
	src.findings, src.findingsError = loadFindings(ctx, src.s)
	src.records, src.slowAt = recs, time.Now()
	return nil
}

// addScope adds to v the rows of scope sc's records, with a cell per edge
// column from the edges' current views (a column of its own, silent, for
// an edge a view names that edgeIdx lacks). edgeIdx maps an edge id to
// its column in v.Edges and gains the columns added. Rows of earlier
// scopes keep their cells: load pads them.
func (src *healthSource) addScope(ctx context.Context, v *web.HealthView, edgeIdx map[string]int, sc healthScope, now time.Time) error {
	views, err := listViews(ctx, src.s.api, sc.tenant)
	if err != nil {
		return err
	}
	// by record → member → edge
	byKey := map[[3]string]*adminv1.EdgeView{}
	for _, ev := range views {
		mv := ev.GetView()
		byKey[[3]string{mv.GetRecordName(), mv.GetMemberName(), mv.GetEdgeId()}] = ev
		if _, ok := edgeIdx[mv.GetEdgeId()]; !ok {
			// A view of an edge the edge list does not have (forgotten):
			// a column of its own, silent.
			edgeIdx[mv.GetEdgeId()] = len(v.Edges)
			v.Edges = append(v.Edges, web.HealthEdge{ID: mv.GetEdgeId(), Silent: true})
		}
	}
	for _, rec := range src.records[sc.scope] {
		hr := web.HealthRecord{Key: rec.name, Name: rec.name, Scope: sc.scope, Pool: rec.pool}
		if sc.scope == web.ScopeManaged {
			hr.Key = "managed-" + rec.name
		}
		for _, m := range rec.members {
			hm := web.HealthMember{Name: m, Off: rec.off[m]}
			hr.Members = append(hr.Members, hm)
		}
		v.Records = append(v.Records, hr)
	}
	// Cells once every edge is known.
	for i := range v.Records {
		hr := &v.Records[i]
		if hr.Scope != sc.scope {
			continue
		}
		for j := range hr.Members {
			hm := &hr.Members[j]
			hm.Cells = nil
			for range v.Edges {
				hm.Cells = append(hm.Cells, web.HealthCell{})
			}
			for k, e := range v.Edges {
				hm.Cells[k] = cellOf(byKey[[3]string{hr.Name, hm.Name, e.ID}], e, hm.Off, now)
				if hm.Format == "" {
					hm.Format = hm.Cells[k].Format
				}
			}
		}
	}
	return nil
}

// cellOf is one edge's view of one member as the grid shows it.
func cellOf(ev *adminv1.EdgeView, e web.HealthEdge, off bool, now time.Time) web.HealthCell {
	c := web.HealthCell{Edge: e.ID, State: web.StateUnknown}
	if ev == nil {
		if e.Silent {
			c.State = web.StateSilent
		} else if off {
			c.State = web.StateOff
		}
		return c
	}
	mv := ev.GetView()
	c.HasView = true
	c.Headroom = mv.GetHeadroom()
	for _, d := range mv.GetDimensions() {
		dim := web.Dim{Name: dimensionName(d.GetDimension()), Limit: d.GetLimit(), Remaining: d.GetRemaining(), Source: sourceName(d.GetSource())}
		if d.GetResetAt() != nil {
			dim.ResetAt = d.GetResetAt().AsTime()
		}
		c.Dims = append(c.Dims, dim)
	}
	if cd := mv.GetCooldown(); cd != nil && cd.GetUntil() != nil {
		c.CooldownUntil = cd.GetUntil().AsTime()
		c.CooldownKind = failureKindName(cd.GetKind())
		c.CooldownReason = cd.GetReason()
		c.Cooling = c.CooldownUntil.After(now)
	}
	c.LastStatus = int(mv.GetLastStatus())
	if mv.GetLastStatusAt() != nil {
		c.LastStatusAt = mv.GetLastStatusAt().AsTime()
	}
	c.Spent, c.Disabled = mv.GetSpent(), mv.GetDisabled()
	c.InFlight, c.Refusals = int(mv.GetInFlight()), int(mv.GetConsecutiveRefusals())
	c.MaxInFlight, c.RequestsToday, c.RPDShare = int(mv.GetMaxInFlight()), mv.GetRequestsToday(), mv.GetRpdShare()
	c.Format = wireWord(mv.GetWireFormat())
	if mv.GetObservedAt() != nil {
		c.ObservedAt = mv.GetObservedAt().AsTime()
	}
	names := make([]string, 0, len(mv.GetCounters()))
	for k := range mv.GetCounters() {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		c.Counters = append(c.Counters, web.Counter{Name: k, Value: mv.GetCounters()[k]})
	}
	switch {
	case ev.GetExpired() || e.Silent:
		c.State = web.StateSilent
	case c.Disabled:
		c.State = web.StateDisabled
	case c.Spent:
		c.State = web.StateSpent
	case c.Cooling:
		c.State = web.StateCooling
	case off:
		c.State = web.StateOff
	default:
		c.State = web.StateHealthy
	}
	return c
}

// dimensionName is a headroom dimension's word: requests, input-tokens,
// output-tokens or tokens ("unknown" for none).
func dimensionName(d telemetryv1.Dimension) string {
	if n := words.Of(d); n != "" {
		return n
	}
	return "unknown"
}

// sourceName is where a headroom came from: headers or declared.
func sourceName(s telemetryv1.HeadroomSource) string { return words.Of(s) }

// failureKindName is a cooldown's kind: "rate_limited" for
// FAILURE_KIND_RATE_LIMITED.
func failureKindName(k telemetryv1.FailureKind) string { return words.CooldownKind(k) }

// severityName is a doctor finding's severity: error, warning or info.
func severityName(s adminv1.Severity) string {
	if n := words.Severity(s); n != "" {
		return n
	}
	return "info"
}

// loadHealthRecords lists a scope's records with their members in order
// and which of them are off.
func loadHealthRecords(ctx context.Context, api *Clients, tenant string) ([]healthRecord, error) {
	recs, err := listRecords(ctx, api, tenant, false)
	if err != nil {
		return nil, err
	}
	var out []healthRecord
	for _, rec := range recs {
		hr := healthRecord{name: rec.GetName(), pool: rec.GetKind() == adminv1.RecordKind_RECORD_KIND_POOL, off: map[string]bool{}}
		if !hr.pool {
			hr.members = []string{rules.PrimaryMember}
			out = append(out, hr)
			continue
		}
		hr.members = slices.Clone(rec.GetMemberNames())
		tok := ""
		for {
			resp, err := api.Pools.ListPoolMembers(ctx, connect.NewRequest(&adminv1.ListPoolMembersRequest{
				Tenant: tenant, Record: rec.GetName(), PageSize: 1000, PageToken: tok,
			}))
			if err != nil {
				if connect.CodeOf(err) == connect.CodeNotFound {
					break // deleted meanwhile
				}
				return nil, err
			}
			for _, md := range resp.Msg.GetMembers() {
				hr.off[md.GetMember().GetName()] = md.GetEffective().GetOff()
			}
			if tok = resp.Msg.GetNextPageToken(); tok == "" {
				break
			}
		}
		out = append(out, hr)
	}
	return out, nil
}

// listRecords lists every record of a scope.
func listRecords(ctx context.Context, api *Clients, tenant string, shared bool) ([]*adminv1.ProviderRecord, error) {
	var out []*adminv1.ProviderRecord
	tok := ""
	for {
		resp, err := api.Providers.ListProviders(ctx, connect.NewRequest(&adminv1.ListProvidersRequest{
			Tenant: tenant, IncludeShared: shared, PageSize: 1000, PageToken: tok,
		}))
		if err != nil {
			return nil, err
		}
		out = append(out, resp.Msg.GetRecords()...)
		if tok = resp.Msg.GetNextPageToken(); tok == "" {
			return out, nil
		}
	}
}

func listEdges(ctx context.Context, api *Clients, tenant string) ([]*adminv1.Edge, error) {
	var out []*adminv1.Edge
	tok := ""
	for {
		resp, err := api.Edges.ListEdges(ctx, connect.NewRequest(&adminv1.ListEdgesRequest{Tenant: tenant, PageSize: 1000, PageToken: tok}))
		if err != nil {
			return nil, err
		}
		out = append(out, resp.Msg.GetEdges()...)
		if tok = resp.Msg.GetNextPageToken(); tok == "" {
			return out, nil
		}
	}
}

func listViews(ctx context.Context, api *Clients, tenant string) ([]*adminv1.EdgeView, error) {
	var out []*adminv1.EdgeView
	tok := ""
	for {
		resp, err := api.Edges.ListMemberViews(ctx, connect.NewRequest(&adminv1.ListMemberViewsRequest{
			Tenant: tenant, IncludeExpired: true, PageSize: 1000, PageToken: tok,
		}))
		if err != nil {
			return nil, err
		}
		out = append(out, resp.Msg.GetViews()...)
		if tok = resp.Msg.GetNextPageToken(); tok == "" {
			return out, nil
		}
	}
}

// loadFindings asks the doctor: about the tenant, and for cluster admins
// about the cluster too (edge_silent, managed records), keeping the
// cluster-wide findings and those of the tenant shown. A doctor that cannot
// be asked is a message on the page, not a failure of it.
func loadFindings(ctx context.Context, s *session) ([]web.Finding, string) {
	var fs []*adminv1.Finding
	var errs []error
	if s.cluster {
		resp, err := s.api.Doctor.Diagnose(ctx, connect.NewRequest(&adminv1.DiagnoseRequest{}))
		if err != nil {
			errs = append(errs, err)
		} else {
			for _, f := range resp.Msg.GetFindings() {
				if f.GetTenant() == "" || f.GetTenant() == s.tenant {
					fs = append(fs, f)
				}
			}
		}
	} else if s.tenant != "" {
		resp, err := s.api.Doctor.Diagnose(ctx, connect.NewRequest(&adminv1.DiagnoseRequest{Tenant: s.tenant}))
		if err != nil {
			errs = append(errs, err)
		} else {
			fs = resp.Msg.GetFindings()
		}
	}
	var out []web.Finding
	for _, f := range fs {
		wf := web.Finding{
			Code: f.GetCode(), Severity: severityName(f.GetSeverity()), Message: f.GetMessage(), Hint: f.GetHint(),
			Record: f.GetRecord(), Members: f.GetMembers(), Edges: f.GetEdges(),
		}
		if f.GetSince() != nil {
			wf.Since = f.GetSince().AsTime()
		}
		out = append(out, wf)
	}
	if err := errors.Join(errs...); err != nil {
		p, _ := problemsOf(err)
		return out, "The doctor could not be asked: " + p.Message
	}
	return out, ""
}

// wireWord keeps a view's wire format when it is one this build knows by
// name, so an edge's odd value is never shown.
func wireWord(s string) string {
	if _, ok := formats.WireFormats.ParseStored(s); ok {
		return s
	}
	return ""
}
