package compile

import (
	"fmt"
	"slices"
	"strconv"

	configv1 "weir.dev/proto/gen/weir/config/v1"

	"weir.dev/routing"
)

// Compile turns one tenant's snapshot, plus the managed records of the
// cluster snapshot that are enabled for that tenant (those whose tenant_ids
// list the tenant's id), into the tenant's immutable routing table.
//
// cluster may be nil: the tenant then has only its own records. The table's
// records are the tenant's own records in snapshot order, then the enabled
// managed records in cluster order; Table.Record resolves a name to the first
// of them, so an own record wins a name it shares with a managed one
// (R-MODEL-1 pinning, R-MODEL-3).
//
// Compile never changes its arguments and the table shares no memory with
// them. When the snapshot breaks any rule, Compile returns a nil table and an
// error that wraps ErrInvalid and one *Problem per broken rule (see
// Problems); the caller must then keep the table it had. It never returns a
// partial table.
func Compile(tenant *configv1.TenantSnapshot, cluster *configv1.ClusterSnapshot) (*routing.Table, error) {
	t, _, err := build(tenant, cluster)
	return t, err
}

// build is Compile, also returning the key entries the table was built from
// (the table does not expose revoked keys; the tests dump them all).
func build(ts *configv1.TenantSnapshot, cs *configv1.ClusterSnapshot) (*routing.Table, []routing.KeyEntry, error) {
	var ps problems
	if ts == nil {
		ps.add("tenant snapshot", "", "missing")
		return nil, nil, ps.err("")
	}
	tn := ts.GetTenant()
	tenantID := tn.GetId()
	switch {
	case tn == nil:
		ps.add("tenant", "", "missing")
	default:
		if tenantID == "" {
			ps.add("tenant", "id", "missing")
		}
		if !validName(tn.GetName()) {
			ps.add("tenant", "name", "%s %s", strconv.Quote(tn.GetName()), nameRule)
		}
	}
	c := &compiler{ps: &ps, tenantID: tenantID}
	limits := c.tenantLimits(tn.GetLimits(), cs)
	rules := c.dataRules(ts.GetDataRules())
	records := c.records(ts.GetRecords(), cs)
	keys := c.keys(ts.GetApiKeys(), tn.GetDisabled())
	budgets := c.budgets(ts.GetBudgets())
	if err := ps.err(tenantID); err != nil {
		return nil, nil, err
	}
	t := routing.NewTable(tenantID, tn.GetName(), rules, records, keys)
	t.Budgets = budgets
	t.Limits = limits
	t.Version = ts.GetVersion()
	return t, keys, nil
}

// compiler carries what every step of one compilation shares.
type compiler struct {
	ps       *problems
	tenantID string
}

// dataRules compiles the tenant's data rules (R-ELIG-2). Allowed regions are
// region names or globs.
func (c *compiler) dataRules(d *configv1.DataRules) routing.DataRules {
	return routing.DataRules{
		AllowedRegions: c.regionPatterns("data_rules", "allowed_regions", d.GetAllowedRegions()),
		NoRetainedData: d.GetNoRetainedData(),
		RequiredTags:   copyMap(d.GetRequiredTags()),
	}
}

// regionPatterns copies a list of region names or globs, reporting each one
// that is malformed. It returns nil for an empty list, which the routing core
// reads as "no restriction".
func (c *compiler) regionPatterns(where, field string, in []string) []string {
	if len(in) == 0 {
		return nil
	}
	for i, p := range in {
		if !validRegionPattern(p) {
			c.ps.add(where, fmt.Sprintf("%s[%d]", field, i), "%s %s", strconv.Quote(p), regionPatternRule)
		}
	}
	return slices.Clone(in)
}

// keys compiles the tenant's API keys. When the tenant is disabled every key
// is compiled as revoked, so every call of the tenant is refused as with an
// unknown key; the routing table has no "disabled tenant" state of its own.
func (c *compiler) keys(in []*configv1.ApiKey, tenantDisabled bool) []routing.KeyEntry {
	out := make([]routing.KeyEntry, 0, len(in))
	names := map[string]bool{}
	sums := map[[32]byte]string{}
	for i, k := range in {
		where := objectWhere("key", k.GetName(), i)
		if k == nil {
			c.ps.add(where, "", "missing")
			continue
		}
		if k.GetId() == "" {
			c.ps.add(where, "id", "missing")
		}
		if !validName(k.GetName()) {
			c.ps.add(where, "name", "%s %s", strconv.Quote(k.GetName()), nameRule)
		} else if names[k.GetName()] {
			c.ps.add(where, "name", "another key has the same name")
		}
		names[k.GetName()] = true
		var sum [32]byte
		if len(k.GetSha256()) != len(sum) {
			c.ps.add(where, "sha256", "must be 32 bytes, got %d", len(k.GetSha256()))
		} else {
			copy(sum[:], k.GetSha256())
			if other, dup := sums[sum]; dup {
				c.ps.add(where, "sha256", "the same hash as key %s", strconv.Quote(other))
			}
			sums[sum] = k.GetName()
		}
		out = append(out, routing.KeyEntry{SHA256: sum, Key: &routing.Key{
			ID:             k.GetId(),
			Name:           k.GetName(),
			AllowedModels:  stringSet(k.GetAllowedModels()),
			AllowedRecords: stringSet(k.GetAllowedRecords()),
			Regions:        c.regionPatterns(where, "regions", k.GetRegions()),
			Revoked:        k.GetRevoked() || tenantDisabled,
			Limits:         c.callerLimits(where, k.GetLimits()),
		}})
	}
	return out
}

// tenantLimits compiles the tenant's caller limits (R-CAP-2). A
// max_in_flight of 0 takes the cluster snapshot's
// default_tenant_max_in_flight, or routing.DefaultTenantMaxInFlight when
// that is 0 or there is no cluster snapshot, so every compiled tenant has
// one. A cluster default out of range is reported as a problem of every
// tenant compiled with it.
func (c *compiler) tenantLimits(in *configv1.CallerLimits, cs *configv1.ClusterSnapshot) routing.CallerLimits {
	out := c.callerLimits("tenant", in)
	def := cs.GetDefaultTenantMaxInFlight()
	if !inRange(def, routing.MaxCallerInFlight) {
		c.ps.add("cluster", "default_tenant_max_in_flight", "must be 0-%d, got %d", routing.MaxCallerInFlight, def)
	}
	if out.MaxInFlight == 0 {
		out.MaxInFlight = def
	}
	if out.MaxInFlight <= 0 {
		out.MaxInFlight = routing.DefaultTenantMaxInFlight
	}
	return out
}

// callerLimits checks and copies the caller limits of a tenant or a key;
// nil means none.
func (c *compiler) callerLimits(where string, in *configv1.CallerLimits) routing.CallerLimits {
	rpm, mif := in.GetRpm(), in.GetMaxInFlight()
	if !inRange(rpm, routing.MaxCallerRPM) {
		c.ps.add(where, "limits.rpm", "must be 0-%d, got %d", routing.MaxCallerRPM, rpm)
	}
	if !inRange(mif, routing.MaxCallerInFlight) {
		c.ps.add(where, "limits.max_in_flight", "must be 0-%d, got %d", routing.MaxCallerInFlight, mif)
	}
	return routing.CallerLimits{RPM: rpm, MaxInFlight: mif}
}

func inRange(v, hi int64) bool { return v >= 0 && v <= hi }

// budgets compiles the budgets that apply to the tenant's calls. A budget's
// key_id is not checked against the keys: a budget of a deleted key simply
// applies to no call.
func (c *compiler) budgets(in []*configv1.Budget) []routing.BudgetRef {
	var out []routing.BudgetRef
	for i, b := range in {
		where := objectWhere("budget", b.GetName(), i)
		if b == nil {
			c.ps.add(where, "", "missing")
			continue
		}
		if b.GetId() == "" {
			c.ps.add(where, "id", "missing")
		}
		if b.GetLimitNanos() < 0 {
			c.ps.add(where, "limit_nanos", "must not be negative, got %d", b.GetLimitNanos())
		}
		out = append(out, routing.BudgetRef{
			ID:    b.GetId(),
			Name:  b.GetName(),
			KeyID: b.GetKeyId(),
			Limit: routing.Nanos(b.GetLimitNanos()),
		})
	}
	return out
}

// objectWhere names an object for a Problem: by its name when it has one,
// else by its position.
func objectWhere(kind, name string, i int) string {
	if name == "" {
		return kind + " #" + strconv.Itoa(i)
	}
	return kind + " " + strconv.Quote(name)
}

// stringSet returns the strings as a set, or nil for an empty list (which the
// routing core reads as "no restriction").
func stringSet(in []string) map[string]bool {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]bool, len(in))
	for _, s := range in {
		out[s] = true
	}
	return out
}

// copyMap returns a copy of m, or nil when m is empty.
func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Record compiles one provider record on its own, as Compile would compile it
// inside a snapshot: members resolved against the record (inheritance,
// defaults, merged prices), or the record's problems. managed marks a record
// of the cluster's managed records (it then has no tenant). The control plane
// uses it to show what the edges will route over; Compile remains the
// authority on a whole snapshot (names unique across records, keys, rules).
func Record(r *configv1.ProviderRecord, managed bool) (*routing.Record, error) {
	var ps problems
	c := &compiler{ps: &ps, tenantID: r.GetTenantId()}
	where := objectWhere("record", r.GetName(), 0)
	c.checkRecord(where, r, managed)
	rec := c.record(where, r, managed)
	if err := ps.err(r.GetTenantId()); err != nil {
		return nil, err
	}
	return rec, nil
}
