package snapshot

import (
	"fmt"
	"slices"

	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/compile"
	"weir.dev/routing/rules"
)

// The builder's output must be what every edge accepts: checkTenant and
// checkCluster compile it with the edges' own compiler (weir.dev/routing/
// compile), the one statement of the config rules, and add only what is the
// builder's own promise beyond them (the snapshot is stamped, secrets are
// sealed for the edges, weights and orders are written out, empty caller
// limits are not sent, budgets have a period).

// checkTenant checks a tenant snapshot the builder produced.
func checkTenant(ts *configv1.TenantSnapshot, edgeKey []byte) []string {
	var out []string
	if _, err := compile.Compile(ts, nil); err != nil {
		out = append(out, compileProblems(err)...)
	}
	if ts.GetGeneratedAt() == nil || ts.GetVersion() == 0 {
		out = append(out, "snapshot: no generated_at or version")
	}
	out = append(out, sentLimits("tenant", ts.GetTenant().GetLimits())...)
	for _, k := range ts.GetApiKeys() {
		out = append(out, sentLimits("key "+k.GetName(), k.GetLimits())...)
	}
	for _, r := range ts.GetRecords() {
		out = append(out, writtenOut(r)...)
	}
	for _, b := range ts.GetBudgets() {
		if b.GetPeriod() == configv1.BudgetPeriod_BUDGET_PERIOD_UNSPECIFIED {
			out = append(out, fmt.Sprintf("budget %s: no period", b.GetName()))
		}
	}
	return append(out, sealed(ts.GetSecrets(), ts.GetTenant().GetId(), edgeKey)...)
}

// checkCluster checks a cluster snapshot the builder produced: every
// managed record compiles for every tenant it is enabled for (names unique
// among them), and the default caller limit is always said (R-CAP-2).
func checkCluster(cs *configv1.ClusterSnapshot, edgeKey []byte) []string {
	var out []string
	if cs.GetGeneratedAt() == nil || cs.GetVersion() == 0 {
		out = append(out, "snapshot: no generated_at or version")
	}
	var tenants []string
	for _, mr := range cs.GetManagedRecords() {
		r := mr.GetRecord()
		if !r.GetManaged() || r.GetTenantId() != "" {
			out = append(out, fmt.Sprintf("managed record %s: not marked managed, or has a tenant", r.GetName()))
		}
		if slices.Contains(mr.GetTenantIds(), "") {
			out = append(out, fmt.Sprintf("managed record %s: empty tenant id", r.GetName()))
		}
		out = append(out, writtenOut(r)...)
		tenants = append(tenants, mr.GetTenantIds()...)
	}
	slices.Sort(tenants)
	for _, id := range slices.Compact(tenants) {
		if id == "" {
			continue
		}
		ts := &configv1.TenantSnapshot{Tenant: &configv1.Tenant{Id: id, Name: "tenant"}}
		if _, err := compile.Compile(ts, cs); err != nil {
			out = append(out, compileProblems(err)...)
		}
	}
	if d := cs.GetDefaultTenantMaxInFlight(); d < 1 {
		out = append(out, fmt.Sprintf("default_tenant_max_in_flight %d: not said", d))
	}
	return append(out, sealed(cs.GetSecrets(), "", edgeKey)...)
}

// compileProblems lists the problems of a compile error, or the error
// itself when it holds none.
func compileProblems(err error) []string {
	var out []string
	for _, p := range compile.Problems(err) {
		out = append(out, p.Error())
	}
	if len(out) == 0 {
		out = append(out, err.Error())
	}
	return out
}

// sentLimits reports caller limits sent though both are 0 (the builder
// leaves them out then).
func sentLimits(where string, l *configv1.CallerLimits) []string {
	if l != nil && l.GetRpm() == 0 && l.GetMaxInFlight() == 0 {
		return []string{where + ": limits sent though both are 0"}
	}
	return nil
}

// writtenOut reports pool members whose weight or order is left 0: the
// builder writes the stored values, which are never 0.
func writtenOut(r *configv1.ProviderRecord) []string {
	var out []string
	for _, m := range r.GetMembers() {
		if m.GetWeight() == 0 || m.GetOrder() == 0 {
			out = append(out, fmt.Sprintf("record %s member %s: weight %d, order %d", r.GetName(), m.GetName(), m.GetWeight(), m.GetOrder()))
		}
	}
	return out
}

// sealed checks sealed secrets: names, hosts, owner, and that each opens
// with the edge key.
func sealed(in []*configv1.Secret, tenantID string, edgeKey []byte) []string {
	var out []string
	for _, s := range in {
		where := "secret " + s.GetName()
		if !rules.ValidName(s.GetName()) {
			out = append(out, fmt.Sprintf("%s: name %q", where, s.GetName()))
		}
		if len(s.GetHosts()) == 0 || s.GetTenantId() != tenantID {
			out = append(out, fmt.Sprintf("%s: no hosts, or tenant_id %q", where, s.GetTenantId()))
		}
		if _, err := edgeOpen(edgeKey, s.GetCiphertext()); err != nil {
			out = append(out, fmt.Sprintf("%s: does not open with the edge key: %v", where, err))
		}
	}
	return out
}
