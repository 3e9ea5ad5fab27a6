package admin

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

// OutboxStallAfter is how long a committed change may wait unpublished in
// the outbox before Diagnose reports "outbox_stalled".
const OutboxStallAfter = time.Minute

// doctorQueries are the reads DoctorService makes.
type doctorQueries interface {
	tenantGetter
	recordQueries
	viewQueries
	ListTenants(ctx context.Context) ([]sqlc.Tenant, error)
	ListEdges(ctx context.Context) ([]sqlc.Edge, error)
	StalledOutbox(ctx context.Context, arg sqlc.StalledOutboxParams) (sqlc.StalledOutboxRow, error)
}

// DoctorService implements weir.admin.v1.DoctorService. Checks so far:
// "shared_account" (R-SEC-4: members of one record sharing a key secret or a
// host name, unless they declare different accounts), "pool_cooling" (every member of a record cooling on some edge,
// from member views), "edge_silent" (an edge known to the control plane
// that has not reported for more than ViewMaxAge; edges serve every tenant,
// so this check runs for the whole cluster only, i.e. for cluster admins)
// and "outbox_stalled" (config changes
// unpublished for more than OutboxStallAfter). A check that cannot run is a "check_failed"
// finding, never an RPC error.
type DoctorService struct {
	base
	q doctorQueries
}

type owner struct {
	id   pgtype.UUID
	name string // "" for the cluster's managed records
}

// Diagnose runs every check for the tenant, or the whole cluster.
func (s *DoctorService) Diagnose(ctx context.Context, req *connect.Request[adminv1.DiagnoseRequest]) (*connect.Response[adminv1.DiagnoseResponse], error) {
	_, t, err := scope(ctx, s.q, req.Msg.GetTenant(), auth.TenantRoles()...)
	if err != nil {
		return nil, err
	}
	now := s.now()
	var findings []*adminv1.Finding
	failed := func(check string, err error) {
		s.log.WarnContext(ctx, "doctor check failed", "check", check, "err", err)
		findings = append(findings, &adminv1.Finding{
			Code: "check_failed", Severity: adminv1.Severity_SEVERITY_WARNING, Tenant: req.Msg.GetTenant(),
			Message: fmt.Sprintf("the %s check could not run", check), Hint: "see the control plane's log",
		})
	}
	owners := []owner{{id: t.ID, name: t.Name}}
	if req.Msg.GetTenant() == "" {
		tenants, err := s.q.ListTenants(ctx)
		if err != nil {
			failed("tenants", err)
		}
		owners = []owner{{id: store.Cluster}}
		for _, tn := range tenants {
			owners = append(owners, owner{id: tn.ID, name: tn.Name})
		}
	}
	for _, o := range owners {
		recs, err := loadRecords(ctx, s.q, o.id)
		if err != nil {
			failed("shared_account", err)
			continue
		}
		findings = append(findings, sharedAccounts(o.name, recs)...)
		views, err := loadViews(ctx, s.q, o.id, now)
		if err != nil {
			failed("pool_cooling", err)
			continue
		}
		findings = append(findings, poolCooling(o.name, recs, views, now)...)
	}
	if req.Msg.GetTenant() == "" {
		if edges, err := s.q.ListEdges(ctx); err != nil {
			failed("edge_silent", err)
		} else {
			findings = append(findings, silentEdges(edges, now)...)
		}
	}
	stalled, err := s.q.StalledOutbox(ctx, sqlc.StalledOutboxParams{
		Before: pgts(now.Add(-OutboxStallAfter)), AllTenants: req.Msg.GetTenant() == "", TenantID: t.ID,
	})
	if err != nil {
		failed("outbox_stalled", err)
	} else if stalled.Stalled > 0 {
		findings = append(findings, &adminv1.Finding{
			Code: "outbox_stalled", Severity: adminv1.Severity_SEVERITY_ERROR, Tenant: req.Msg.GetTenant(),
			Message: fmt.Sprintf("%d committed config changes have waited more than %s to be published to edges", stalled.Stalled, OutboxStallAfter),
			Hint:    "check that the publisher runs and that NATS is reachable",
			Since:   ts(stalled.Oldest),
		})
	}
	slices.SortStableFunc(findings, func(a, b *adminv1.Finding) int {
		return cmp.Or(cmp.Compare(b.GetSeverity(), a.GetSeverity()), cmp.Compare(a.GetTenant(), b.GetTenant()),
			cmp.Compare(a.GetRecord(), b.GetRecord()), cmp.Compare(a.GetCode(), b.GetCode()))
	})
	return connect.NewResponse(&adminv1.DiagnoseResponse{Findings: findings, CheckedAt: timestamppb.New(now)}), nil
}

// sharedAccounts reports members of one record that share a key secret or a
// host name, ports aside (R-SEC-4), leaving out what the operator has
// declared: two members whose declared accounts differ are separate
// accounts, so a group is reported only with the members that have no
// declared account or share one with another member of the group (see
// undeclaredApart), and not at all when fewer than two remain. The hint
// fits the case: another key for a shared secret, a distinct account for
// separate accounts behind one host.
func sharedAccounts(tenant string, recs []record) []*adminv1.Finding {
	var out []*adminv1.Finding
	for _, r := range recs {
		ends := r.endpoints()
		if len(ends) < 2 {
			continue
		}
		accounts := declaredAccounts(ends)
		bySecret := map[string][]string{}
		byHost := map[string][]string{}
		for _, e := range ends {
			if ref, ok := e.secrets["key_secret"]; ok {
				bySecret[ref.name] = append(bySecret[ref.name], e.member)
			}
			if h, _, ok := e.sendHost(""); ok {
				byHost[h] = append(byHost[h], e.member)
			}
		}
		add := func(groups map[string][]string, what, hint string) {
			keys := make([]string, 0, len(groups))
			for k := range groups {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				ms := undeclaredApart(groups[k], accounts)
				if len(ms) < 2 {
					continue
				}
				sort.Strings(ms)
				out = append(out, &adminv1.Finding{
					Code: "shared_account", Severity: adminv1.Severity_SEVERITY_WARNING, Tenant: tenant, Record: r.rec.Name, Members: ms,
					Message: fmt.Sprintf("members %s of record %q share %s %q: they are probably one account and add no capacity", strings.Join(ms, ", "), r.rec.Name, what, k),
					Hint:    hint,
				})
			}
		}
		add(bySecret, "the key secret", "give each member the key of its own account, in a secret of its own; if they are separate accounts after all, declare a different account on each")
		add(byHost, "the host", "if they are separate accounts on one host, declare a different account on each; if they are one deployment, one member is enough")
	}
	return out
}

// declaredAccounts maps each endpoint's member to the account it declares
// (its own, else the record's when the member sets none: see endpoint).
// Members that declare none are absent.
func declaredAccounts(ends []endpoint) map[string]string {
	out := map[string]string{}
	for _, e := range ends {
		if e.account != "" {
			out[e.member] = e.account
		}
	}
	return out
}

// undeclaredApart returns the members of group that the operator has not
// declared apart from every other member of it: two members are declared
// apart when both declare an account and the accounts differ. The result
// keeps group's order and has no member or at least two.
func undeclaredApart(group []string, accounts map[string]string) []string {
	var out []string
	for i, a := range group {
		for j, b := range group {
			if i != j && (accounts[a] == "" || accounts[b] == "" || accounts[a] == accounts[b]) {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// poolCooling reports records whose every member (that is on) is cooling on
// some edge according to current views (R-OBS-2).
func poolCooling(tenant string, recs []record, views []*adminv1.EdgeView, now time.Time) []*adminv1.Finding {
	cooling := map[string]map[string][]string{} // record → member → edges
	for _, v := range views {
		mv := v.GetView()
		if v.GetExpired() || mv.GetCooldown().GetUntil() == nil || !mv.GetCooldown().GetUntil().AsTime().After(now) {
			continue
		}
		if cooling[mv.GetRecordName()] == nil {
			cooling[mv.GetRecordName()] = map[string][]string{}
		}
		cooling[mv.GetRecordName()][mv.GetMemberName()] = append(cooling[mv.GetRecordName()][mv.GetMemberName()], mv.GetEdgeId())
	}
	var out []*adminv1.Finding
	for _, r := range recs {
		cm := cooling[r.rec.Name]
		if len(cm) == 0 {
			continue
		}
		var members, edges []string
		all := true
		for _, e := range r.endpoints() {
			if e.off {
				continue
			}
			es, ok := cm[e.member]
			if !ok {
				all = false
				break
			}
			members = append(members, e.member)
			for _, x := range es {
				if !slices.Contains(edges, x) {
					edges = append(edges, x)
				}
			}
		}
		if !all || len(members) == 0 {
			continue
		}
		sort.Strings(edges)
		out = append(out, &adminv1.Finding{
			Code: "pool_cooling", Severity: adminv1.Severity_SEVERITY_ERROR, Tenant: tenant, Record: r.rec.Name,
			Members: members, Edges: edges,
			Message: fmt.Sprintf("every member of record %q is cooling: calls get 429 weir_pool_cooling", r.rec.Name),
			Hint:    "add capacity (members, higher limits) or wait for the cooldowns to end",
		})
	}
	return out
}

// silentEdges reports edges whose last report (member view) is older than
// ViewMaxAge: their views have expired and they may be down or cut off
// from NATS.
func silentEdges(edges []sqlc.Edge, now time.Time) []*adminv1.Finding {
	var out []*adminv1.Finding
	for _, e := range edges {
		if !e.LastSeen.Valid || !e.LastSeen.Time.Before(now.Add(-ViewMaxAge)) {
			continue
		}
		out = append(out, &adminv1.Finding{
			Code: "edge_silent", Severity: adminv1.Severity_SEVERITY_WARNING, Edges: []string{e.ID},
			Message: fmt.Sprintf("edge %q has not reported for %s", e.ID, now.Sub(e.LastSeen.Time).Truncate(time.Second)),
			Hint:    "check that the edge runs and reaches NATS; an edge taken out of service is forgotten after a day",
			Since:   ts(e.LastSeen),
		})
	}
	return out
}
