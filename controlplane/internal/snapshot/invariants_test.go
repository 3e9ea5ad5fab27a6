package snapshot

import (
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strings"

	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// The rules below restate what the edge compiler (weir.dev/routing/compile,
// check.go, record.go, price.go, auth.go) refuses a snapshot for. They check
// the builder's output in tests; the compiler remains the authority.

// checker collects problems found in one snapshot.
type checker struct {
	problems []string
	edgeKey  []byte
	nameRE   *regexp.Regexp // records, members, keys, tenants, secrets, budgets
	regionRE *regexp.Regexp // region names (R-ELIG-3)
	globRE   *regexp.Regexp // region names or globs
}

func newChecker(edgeKey []byte) *checker {
	return &checker{
		edgeKey:  edgeKey,
		nameRE:   regexp.MustCompile(`^[a-z0-9_-]{1,64}$`),
		regionRE: regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`),
		globRE:   regexp.MustCompile(`^[A-Za-z0-9_*?-]{1,64}$`),
	}
}

func (c *checker) addf(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

func (c *checker) name(where, n string) {
	if !c.nameRE.MatchString(n) {
		c.addf("%s: name %q is not 1-64 of [a-z0-9_-]", where, n)
	}
}

func (c *checker) regions(where string, in []string) {
	for _, r := range in {
		if !c.globRE.MatchString(r) {
			c.addf("%s: region pattern %q", where, r)
		}
	}
}

// checkTenant checks a tenant snapshot.
func checkTenant(ts *configv1.TenantSnapshot, edgeKey []byte) []string {
	c := newChecker(edgeKey)
	if ts.GetTenant().GetId() == "" {
		c.addf("tenant: no id")
	}
	c.name("tenant", ts.GetTenant().GetName())
	if ts.GetGeneratedAt() == nil || ts.GetVersion() == 0 {
		c.addf("snapshot: no generated_at or version")
	}
	c.regions("data_rules", ts.GetDataRules().GetAllowedRegions())
	c.callerLimits("tenant", ts.GetTenant().GetLimits())
	keys, hashes := map[string]bool{}, map[string]bool{}
	for _, k := range ts.GetApiKeys() {
		where := "key " + k.GetName()
		c.name(where, k.GetName())
		if k.GetId() == "" {
			c.addf("%s: no id", where)
		}
		if keys[k.GetName()] {
			c.addf("%s: name used twice", where)
		}
		keys[k.GetName()] = true
		if len(k.GetSha256()) != 32 {
			c.addf("%s: sha256 of %d bytes", where, len(k.GetSha256()))
		}
		if hashes[string(k.GetSha256())] {
			c.addf("%s: hash used twice", where)
		}
		hashes[string(k.GetSha256())] = true
		c.regions(where, k.GetRegions())
		c.callerLimits(where, k.GetLimits())
	}
	names := map[string]bool{}
	for _, r := range ts.GetRecords() {
		if names[r.GetName()] {
			c.addf("record %s: name used twice", r.GetName())
		}
		names[r.GetName()] = true
		if r.GetManaged() || (r.GetTenantId() != "" && r.GetTenantId() != ts.GetTenant().GetId()) {
			c.addf("record %s: not the tenant's own", r.GetName())
		}
		c.record(r, false)
	}
	for _, b := range ts.GetBudgets() {
		c.name("budget "+b.GetName(), b.GetName())
		if b.GetId() == "" || b.GetLimitNanos() < 0 || b.GetPeriod() == configv1.BudgetPeriod_BUDGET_PERIOD_UNSPECIFIED {
			c.addf("budget %s: id, limit or period", b.GetName())
		}
	}
	c.secrets(ts.GetSecrets(), ts.GetTenant().GetId())
	return c.problems
}

// checkCluster checks a cluster snapshot.
func checkCluster(cs *configv1.ClusterSnapshot, edgeKey []byte) []string {
	c := newChecker(edgeKey)
	if cs.GetGeneratedAt() == nil || cs.GetVersion() == 0 {
		c.addf("snapshot: no generated_at or version")
	}
	ids := map[string]bool{}
	for _, mr := range cs.GetManagedRecords() {
		r := mr.GetRecord()
		if ids[r.GetId()] {
			c.addf("record %s: id used twice", r.GetName())
		}
		ids[r.GetId()] = true
		if !r.GetManaged() || r.GetTenantId() != "" {
			c.addf("managed record %s: not marked managed, or has a tenant", r.GetName())
		}
		for _, tid := range mr.GetTenantIds() {
			if tid == "" {
				c.addf("managed record %s: empty tenant id", r.GetName())
			}
		}
		c.record(r, true)
	}
	c.secrets(cs.GetSecrets(), "")
	// R-CAP-2: always said, in the range serve accepts.
	if d := cs.GetDefaultTenantMaxInFlight(); d < 1 || d > 1_000_000 {
		c.addf("default_tenant_max_in_flight %d: not 1-1000000", d)
	}
	return c.problems
}

// callerLimits checks a tenant's or a key's caller limits (R-CAP-2): absent
// when both are 0, else in range.
func (c *checker) callerLimits(where string, l *configv1.CallerLimits) {
	if l == nil {
		return
	}
	if l.GetRpm() == 0 && l.GetMaxInFlight() == 0 {
		c.addf("%s: limits sent though both are 0", where)
	}
	if l.GetRpm() < 0 || l.GetRpm() > 100_000_000 {
		c.addf("%s: rpm %d out of range", where, l.GetRpm())
	}
	if l.GetMaxInFlight() < 0 || l.GetMaxInFlight() > 1_000_000 {
		c.addf("%s: max_in_flight %d out of range", where, l.GetMaxInFlight())
	}
}

// record checks one record and its members.
func (c *checker) record(r *configv1.ProviderRecord, managed bool) {
	where := "record " + r.GetName()
	c.name(where, r.GetName())
	if r.GetId() == "" {
		c.addf("%s: no id", where)
	}
	if r.GetWireFormat() == configv1.WireFormat_WIRE_FORMAT_UNSPECIFIED {
		c.addf("%s: no wire format", where)
	}
	if r.GetRegion() != "" && !c.regionRE.MatchString(r.GetRegion()) {
		c.addf("%s: region %q", where, r.GetRegion())
	}
	c.regions(where, r.GetAllowedRegions())
	models := map[string]bool{}
	for _, m := range r.GetModels() {
		if m.GetName() == "" || strings.ContainsAny(m.GetName(), " \t\n") || models[m.GetName()] {
			c.addf("%s: model %q", where, m.GetName())
		}
		models[m.GetName()] = true
	}
	recPrices := map[string]*configv1.Price{}
	for _, p := range r.GetPrices() {
		if !models[p.GetModel()] {
			c.addf("%s: price of %q, not a model of the record", where, p.GetModel())
		}
		recPrices[p.GetModel()] = p
	}
	clusterOwned := managed || r.GetInternal()
	wire := r.GetWireFormat()
	pool := len(r.GetMembers()) > 0

	if !pool {
		if r.GetBaseUrl() == "" {
			c.addf("%s: neither a base_url nor members", where)
		}
		c.url(where+": base_url", r.GetBaseUrl(), clusterOwned)
		c.modelMap(where, r.GetModelMap(), models)
		c.auth(where, r.GetAuth(), r.GetKeySecret(), clusterOwned)
		c.prices(where, recPrices, nil, models, nil, wire)
		return
	}
	if r.GetBaseUrl() != "" || len(r.GetModelMap()) > 0 {
		c.addf("%s: a pool with a base_url or model_map", where)
	}
	if len(r.GetMembers()) > 16 {
		c.addf("%s: %d members", where, len(r.GetMembers()))
	}
	members := map[string]bool{}
	for _, m := range r.GetMembers() {
		mwhere := where + " member " + m.GetName()
		c.name(mwhere, m.GetName())
		if members[m.GetName()] {
			c.addf("%s: name used twice", mwhere)
		}
		members[m.GetName()] = true
		if m.GetBaseUrl() == "" {
			c.addf("%s: no base_url", mwhere)
		}
		c.url(mwhere+": base_url", m.GetBaseUrl(), clusterOwned)
		if m.Region != nil && m.GetRegion() != "" && !c.regionRE.MatchString(m.GetRegion()) {
			c.addf("%s: region %q", mwhere, m.GetRegion())
		}
		if m.GetWeight() < 1 || m.GetWeight() > 10000 || m.GetOrder() < 1 {
			c.addf("%s: weight %d, order %d", mwhere, m.GetWeight(), m.GetOrder())
		}
		var serves map[string]bool
		if len(m.GetModels()) > 0 {
			serves = map[string]bool{}
			for _, name := range m.GetModels() {
				if !models[name] {
					c.addf("%s: serves %q, not a model of the record", mwhere, name)
				}
				serves[name] = true
			}
		}
		c.modelMap(mwhere, m.GetModelMap(), models)
		keySecret := r.GetKeySecret()
		if m.KeySecret != nil {
			keySecret = m.GetKeySecret()
		}
		a := m.GetAuth()
		if a.GetKind() == configv1.AuthKind_AUTH_KIND_UNSPECIFIED && a.GetHeader() == "" {
			if a != nil && (a.GetAwsService() != "" || a.GetTokenUrl() != "" || a.GetAccessKeySecret() != "" || a.GetClientId() != "") {
				c.addf("%s: auth fields without a kind or header", mwhere)
			}
			a = r.GetAuth()
		}
		c.auth(mwhere, a, keySecret, clusterOwned)
		own := map[string]*configv1.Price{}
		for _, p := range m.GetPrices() {
			own[p.GetModel()] = p
		}
		c.prices(mwhere, recPrices, own, models, serves, wire)
	}
}

// url checks R-SEC-2: an absolute http(s) URL with a host, https unless
// loopback or cluster-owned, no literal private address on a tenant's record.
func (c *checker) url(where, raw string, clusterOwned bool) {
	if raw == "" {
		return
	}
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" || u.User != nil || u.Fragment != "" {
		c.addf("%s: %q is not an absolute URL with a host and no credentials", where, raw)
		return
	}
	host := u.Hostname()
	addr, ipErr := netip.ParseAddr(host)
	loopback := strings.EqualFold(host, "localhost") || (ipErr == nil && addr.Unmap().IsLoopback())
	switch u.Scheme {
	case "https":
	case "http":
		if !loopback && !clusterOwned {
			c.addf("%s: plain http to %q (R-SEC-2)", where, host)
		}
	default:
		c.addf("%s: scheme %q", where, u.Scheme)
	}
	if ipErr == nil && !clusterOwned {
		a := addr.Unmap()
		if a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsMulticast() || a.IsUnspecified() {
			c.addf("%s: private or link-local address %q on a tenant's record (R-SEC-2)", where, host)
		}
	}
}

// auth checks the auth a member signs with (R-SEC-3, and API-key auth
// needs a key secret).
func (c *checker) auth(where string, a *configv1.Auth, keySecret string, clusterOwned bool) {
	switch a.GetKind() {
	case configv1.AuthKind_AUTH_KIND_SIGV4:
		if a.GetAccessKeySecret() == "" || a.GetAwsRegion() == "" || a.GetAwsService() == "" {
			c.addf("%s: sigv4 without access key secret, region or service (R-SEC-3)", where)
		}
	case configv1.AuthKind_AUTH_KIND_OAUTH2:
		if a.GetTokenUrl() == "" || a.GetClientId() == "" || a.GetClientSecretSecret() == "" {
			c.addf("%s: oauth2 without token url, client id or secret (R-SEC-3)", where)
		}
		c.url(where+": token_url", a.GetTokenUrl(), clusterOwned)
	case configv1.AuthKind_AUTH_KIND_API_KEY:
		if keySecret == "" {
			c.addf("%s: api-key auth without a key secret", where)
		}
	case configv1.AuthKind_AUTH_KIND_UNSPECIFIED:
		if a.GetHeader() != "" && keySecret == "" {
			c.addf("%s: api-key header without a key secret", where)
		}
	}
	if a.GetKind() != configv1.AuthKind_AUTH_KIND_SIGV4 && (a.GetAwsService() != "" || a.GetAwsRegion() != "" || a.GetAccessKeySecret() != "") {
		c.addf("%s: sigv4 fields on %v auth", where, a.GetKind())
	}
	if a.GetKind() != configv1.AuthKind_AUTH_KIND_OAUTH2 && (a.GetTokenUrl() != "" || a.GetClientId() != "" || a.GetClientSecretSecret() != "" || len(a.GetScopes()) > 0) {
		c.addf("%s: oauth2 fields on %v auth", where, a.GetKind())
	}
}

// modelMap checks that a model map's keys are models of the record.
func (c *checker) modelMap(where string, mm map[string]string, models map[string]bool) {
	for k, v := range mm {
		if !models[k] || v == "" {
			c.addf("%s: model_map %q -> %q", where, k, v)
		}
	}
}

// prices checks R-COST-4 as the compiler applies it: the member's price of a
// model replaces the parts it gives of the record's; every merged price of a
// model the member serves is whole (cache write too on anthropic and
// bedrock).
func (c *checker) prices(where string, rec, own map[string]*configv1.Price, models, serves map[string]bool, wire configv1.WireFormat) {
	merged := map[string][4]bool{}
	for model, p := range rec {
		merged[model] = [4]bool{p.InputMicros != nil, p.OutputMicros != nil, p.CacheReadMicros != nil, p.CacheWriteMicros != nil}
	}
	for model, p := range own {
		if !models[model] || (serves != nil && !serves[model]) {
			c.addf("%s: price of %q, a model it does not serve", where, model)
		}
		m := merged[model]
		m[0] = m[0] || p.InputMicros != nil
		m[1] = m[1] || p.OutputMicros != nil
		m[2] = m[2] || p.CacheReadMicros != nil
		m[3] = m[3] || p.CacheWriteMicros != nil
		merged[model] = m
	}
	for model, m := range merged {
		if serves != nil && !serves[model] {
			continue
		}
		needWrite := wire == configv1.WireFormat_WIRE_FORMAT_ANTHROPIC || wire == configv1.WireFormat_WIRE_FORMAT_BEDROCK
		if !m[0] || !m[1] || !m[2] || (needWrite && !m[3]) {
			c.addf("%s: price of %q is not whole (R-COST-4)", where, model)
		}
	}
}

// secrets checks sealed secrets: names, hosts, owner, and that each opens
// with the edge key.
func (c *checker) secrets(in []*configv1.Secret, tenantID string) {
	for _, s := range in {
		where := "secret " + s.GetName()
		c.name(where, s.GetName())
		if len(s.GetHosts()) == 0 || s.GetTenantId() != tenantID {
			c.addf("%s: no hosts, or tenant_id %q", where, s.GetTenantId())
		}
		if _, err := edgeOpen(c.edgeKey, s.GetCiphertext()); err != nil {
			c.addf("%s: does not open with the edge key: %v", where, err)
		}
	}
}
