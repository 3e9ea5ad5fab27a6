package compile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	configv1 "weir.dev/proto/gen/weir/config/v1"

	"weir.dev/routing"
	"weir.dev/routing/formats"
	"weir.dev/routing/rules"
)

// records compiles the tenant's own records, then the managed records of the
// cluster snapshot enabled for the tenant, in that order.
//
// Record names must be unique among the tenant's own records, and among the
// managed records enabled for the tenant; an own record and a managed record
// may share a name, and the own record then owns the name for pinning
// ("record/model", R-MODEL-1) because it comes first in the table. Record ids
// must be unique across both, since member ids are built from them.
func (c *compiler) records(own []*configv1.ProviderRecord, cs *configv1.ClusterSnapshot) []*routing.Record {
	var out []*routing.Record
	ids := map[string]string{}
	add := func(where string, r *configv1.ProviderRecord, names map[string]bool, managed bool) {
		if r.GetId() != "" {
			if other, dup := ids[r.GetId()]; dup {
				c.ps.add(where, "id", "the same id as %s", other)
			}
			ids[r.GetId()] = where
		}
		if validName(r.GetName()) {
			if names[r.GetName()] {
				c.ps.add(where, "name", "another record has the same name")
			}
			names[r.GetName()] = true
		}
		out = append(out, c.record(where, r, managed))
	}

	ownNames := map[string]bool{}
	for i, r := range own {
		where := objectWhere("record", r.GetName(), i)
		if r == nil {
			c.ps.add(where, "", "missing")
			continue
		}
		if r.GetManaged() {
			c.ps.add(where, "managed", "a tenant's own record cannot be managed; managed records come in the cluster snapshot")
		}
		if r.GetTenantId() != "" && r.GetTenantId() != c.tenantID {
			c.ps.add(where, "tenant_id", "belongs to tenant %s, not to this tenant", strconv.Quote(r.GetTenantId()))
		}
		add(where, r, ownNames, false)
	}

	managedNames := map[string]bool{}
	for i, mr := range cs.GetManagedRecords() {
		if c.tenantID == "" || !slices.Contains(mr.GetTenantIds(), c.tenantID) {
			continue
		}
		r := mr.GetRecord()
		where := objectWhere("managed record", r.GetName(), i)
		if r == nil {
			c.ps.add(where, "record", "missing")
			continue
		}
		add(where, r, managedNames, true)
	}
	return out
}

// record compiles one provider record and its members. A managed record is
// marked Managed and has no tenant whatever its own fields say: the cluster
// snapshot's ManagedRecord wrapper is what makes a record managed.
func (c *compiler) record(where string, r *configv1.ProviderRecord, managed bool) *routing.Record {
	if r.GetId() == "" {
		c.ps.add(where, "id", "missing")
	}
	if !validName(r.GetName()) {
		c.ps.add(where, "name", "%s %s", strconv.Quote(r.GetName()), nameRule)
	}
	rec := &routing.Record{
		ID:               r.GetId(),
		Name:             r.GetName(),
		TenantID:         c.tenantID,
		Managed:          managed,
		Internal:         r.GetInternal(),
		Wire:             c.wire(where, r.GetWireFormat()),
		Models:           c.models(where, r.GetModels()),
		Pool:             len(r.GetMembers()) > 0,
		AllowedRegions:   c.regionPatterns(where, "allowed_regions", r.GetAllowedRegions()),
		RateLimitHeaders: c.rateLimitHeaders(where, r.GetRateLimitHeaders()),
		Recovery:         c.recovery(where, r.GetRecovery()),
		DefaultMaxOutput: routing.DefaultMaxOutput,
		Priority:         r.GetPriority(),
	}
	if managed {
		rec.TenantID = ""
	}
	switch n := r.GetDefaultMaxOutput(); {
	case n < 0:
		c.ps.add(where, "default_max_output", "must not be negative, got %d", n)
	case n > 0:
		rec.DefaultMaxOutput = n
	}
	if ts := r.GetCreatedAt(); ts != nil {
		if err := ts.CheckValid(); err != nil {
			c.ps.add(where, "created_at", "%v", err)
		} else {
			rec.CreatedAt = ts.AsTime()
		}
	}
	if reg := r.GetRegion(); reg != "" && !validRegion(reg) {
		c.ps.add(where, "region", "%s %s", strconv.Quote(reg), regionRule)
	}
	recLimits := c.limits(where, "limits", r.GetLimits())
	recPrices := c.recordPrices(where, r.GetPrices(), rec.Models)

	rc := &recordCtx{
		where:        where,
		proto:        r,
		rec:          rec,
		limits:       recLimits,
		prices:       recPrices,
		clusterOwned: managed || r.GetInternal(),
	}
	if !rec.Pool {
		if r.GetBaseUrl() == "" {
			c.ps.add(where, "base_url", "missing: a plain record needs a base_url (a pool needs members)")
		}
		rec.Members = []*routing.Member{c.plainMember(rc)}
	} else {
		c.poolMembers(rc)
	}
	// The record's auth is checked once, where it is declared, and only
	// when some member uses it: a pool whose members all bring their own
	// auth never signs with the record's.
	if rc.authUsed {
		c.authFields(where, r.GetAuth(), rc.clusterOwned)
	}
	return rec
}

// recordCtx is what the members of one record are compiled against.
type recordCtx struct {
	where  string
	proto  *configv1.ProviderRecord
	rec    *routing.Record
	limits routing.Limits
	prices map[string]*configv1.Price
	// clusterOwned records (managed or internal) may use plain http and
	// literal private addresses (R-SEC-2).
	clusterOwned bool
	authUsed     bool // some member signs with the record's auth
}

// poolMembers checks a pool's own fields and compiles its members into
// rc.rec.Members, in order: names valid and distinct, at most maxMembers.
func (c *compiler) poolMembers(rc *recordCtx) {
	where, r, rec := rc.where, rc.proto, rc.rec
	if r.GetBaseUrl() != "" {
		c.ps.add(where, "base_url", "a pool must not have a base_url: each member has its own")
	}
	if len(r.GetModelMap()) > 0 {
		c.ps.add(where, "model_map", "is for plain records: each member of a pool has its own model_map")
	}
	if n := len(r.GetMembers()); n > maxMembers {
		c.ps.add(where, "members", "a pool has at most %d members, got %d", maxMembers, n)
	}
	names := map[string]bool{}
	for i, mp := range r.GetMembers() {
		mwhere := where + " " + objectWhere("member", mp.GetName(), i)
		if mp == nil {
			c.ps.add(mwhere, "", "missing")
			continue
		}
		if !validName(mp.GetName()) {
			c.ps.add(mwhere, "name", "%s %s", strconv.Quote(mp.GetName()), nameRule)
		} else if names[mp.GetName()] {
			c.ps.add(mwhere, "name", "another member of the record has the same name")
		}
		names[mp.GetName()] = true
		m := c.poolMember(rc, mwhere, mp)
		m.Index = len(rec.Members)
		rec.Members = append(rec.Members, m)
	}
}

// plainMember compiles a plain record's one member, rules.PrimaryMember, from the
// record's own fields (model_map included). It serves every model of the
// record at the record's prices, with weight 1 and order 1.
func (c *compiler) plainMember(rc *recordCtx) *routing.Member {
	r := rc.proto
	rc.authUsed = true
	m := &routing.Member{
		ID:          rc.rec.ID + "/" + rules.PrimaryMember,
		Name:        rules.PrimaryMember,
		Record:      rc.rec,
		BaseURL:     r.GetBaseUrl(),
		KeySecret:   r.GetKeySecret(),
		Region:      r.GetRegion(),
		RetainsData: r.GetRetainsData(),
		Tags:        copyMap(r.GetTags()),
		Limits:      rc.limits,
		Weight:      1,
		Order:       1,
		ModelMap:    copyMap(r.GetModelMap()),
		APIVersion:  r.GetApiVersion(),
	}
	c.modelMap(rc.where, r.GetModelMap(), rc.rec.Models)
	if r.GetBaseUrl() != "" {
		checkURL(r.GetBaseUrl(), rc.clusterOwned, func(f string, a ...any) { c.ps.add(rc.where, "base_url", f, a...) })
	}
	m.Auth = c.resolveAuth(rc.where, r.GetAuth(), m.KeySecret, rc.rec.Wire)
	m.Account = account(r.GetAccount(), m)
	m.Prices = c.memberPrices(rc, rc.where, nil, nil)
	return m
}

// poolMember compiles one member of a pool. What the member leaves unset it
// takes from its record (ROUTING.md "Member"):
//   - auth as a whole, when the member's auth names no kind and no header;
//   - key_secret, region, retains_data, account and api_version, when the
//     optional field is absent (a present empty string is kept: it means
//     "none", e.g. no region);
//   - tags: the record's, overlaid with the member's;
//   - limits: the record's only when the member declares none at all (every
//     field 0); declared limits describe the member's own deployment, so a
//     member that declares some is never topped up from the record's;
//   - prices: per model, the record's price with the parts the member gives
//     replaced (R-COST-4).
//
// weight and order default to 1 when 0. The member's own id field is not
// used: the member's id in the table is "<record id>/<member name>", which
// every edge derives alike.
func (c *compiler) poolMember(rc *recordCtx, where string, mp *configv1.Member) *routing.Member {
	r := rc.proto
	m := &routing.Member{
		ID:          rc.rec.ID + "/" + mp.GetName(),
		Name:        mp.GetName(),
		Record:      rc.rec,
		BaseURL:     mp.GetBaseUrl(),
		KeySecret:   inherit(mp.KeySecret, r.GetKeySecret()),
		Region:      inherit(mp.Region, r.GetRegion()),
		RetainsData: inherit(mp.RetainsData, r.GetRetainsData()),
		Tags:        overlay(r.GetTags(), mp.GetTags()),
		Limits:      rc.limits,
		Weight:      1,
		Order:       1,
		ModelMap:    copyMap(mp.GetModelMap()),
		Off:         mp.GetOff(),
		APIVersion:  inherit(mp.ApiVersion, r.GetApiVersion()),
	}
	if mp.GetBaseUrl() == "" {
		c.ps.add(where, "base_url", "missing: every pool member needs its own base_url")
	} else {
		checkURL(mp.GetBaseUrl(), rc.clusterOwned, func(f string, a ...any) { c.ps.add(where, "base_url", f, a...) })
	}
	if mp.Region != nil && mp.GetRegion() != "" && !validRegion(mp.GetRegion()) {
		c.ps.add(where, "region", "%s %s", strconv.Quote(mp.GetRegion()), regionRule)
	}
	if own := c.limits(where, "limits", mp.GetLimits()); own != (routing.Limits{}) {
		m.Limits = own
	}
	switch w := mp.GetWeight(); {
	case w > maxWeight:
		c.ps.add(where, "weight", "must be 1-%d, got %d", maxWeight, w)
	case w > 0:
		m.Weight = w
	}
	if o := mp.GetOrder(); o > 0 {
		m.Order = o
	}

	// Models the member serves: a subset of the record's.
	if len(mp.GetModels()) > 0 {
		m.Models = make(map[string]bool, len(mp.GetModels()))
		for _, name := range mp.GetModels() {
			if _, ok := rc.rec.Models[name]; !ok {
				c.ps.add(where, "models", "%s is not a model of the record", strconv.Quote(name))
			}
			m.Models[name] = true
		}
	}
	c.modelMap(where, mp.GetModelMap(), rc.rec.Models)

	// Auth: the member's own when it names a kind or a header, else the
	// record's as a whole.
	auth := mp.GetAuth()
	if auth.GetKind() != configv1.AuthKind_AUTH_KIND_UNSPECIFIED || auth.GetHeader() != "" {
		c.authFields(where, auth, rc.clusterOwned)
	} else {
		if authHasFields(auth) {
			c.ps.add(where, "auth", "sets fields but no kind or header, so the record's auth would be used and these ignored; name the kind")
		}
		auth = r.GetAuth()
		rc.authUsed = true
	}
	m.Auth = c.resolveAuth(where, auth, m.KeySecret, rc.rec.Wire)
	m.Account = account(inherit(mp.Account, r.GetAccount()), m)
	m.Prices = c.memberPrices(rc, where, mp.GetPrices(), m)
	return m
}

// modelMap checks a model map: every key is a model of the record and every
// value a model name.
func (c *compiler) modelMap(where string, mm map[string]string, models map[string]routing.ModelKind) {
	for _, k := range sortedKeys(mm) {
		if _, ok := models[k]; !ok {
			c.ps.add(where, "model_map", "key %s is not a model of the record", strconv.Quote(k))
		}
		if v := mm[k]; !validModelName(v) {
			c.ps.add(where, "model_map", "%s maps to %s, which is not a model name (1-256 bytes, no spaces)", strconv.Quote(k), strconv.Quote(v))
		}
	}
}

// inherit returns the member's value when the optional field is present, else
// the record's.
func inherit[T any](own *T, record T) T {
	if own != nil {
		return *own
	}
	return record
}

// overlay returns the record's tags with the member's added on top (the
// member's win), or nil when both are empty.
func overlay(record, member map[string]string) map[string]string {
	if len(record)+len(member) == 0 {
		return nil
	}
	out := make(map[string]string, len(record)+len(member))
	for k, v := range record {
		out[k] = v
	}
	for k, v := range member {
		out[k] = v
	}
	return out
}

// account is the capacity group of a member (R-ORDER-4): the declared
// account; else the secret it signs with, as "secret:<name>" (the key secret
// for api-key auth, the access key secret for SigV4, the client secret for
// OAuth2), since members that sign with one secret draw on one account's
// quota; else the member's own id, a group of one.
func account(declared string, m *routing.Member) string {
	if declared != "" {
		return declared
	}
	var secret string
	switch m.Auth.Kind {
	case routing.AuthAPIKey:
		secret = m.KeySecret
	case routing.AuthSigV4:
		secret = m.Auth.AccessKeySecret
	case routing.AuthOAuth2:
		secret = m.Auth.ClientSecret
	}
	if secret != "" {
		return "secret:" + secret
	}
	return m.ID
}

// limits converts declared limits, reporting negative ones.
func (c *compiler) limits(where, field string, l *configv1.Limits) routing.Limits {
	for _, f := range []struct {
		name string
		v    int64
	}{{"rpm", l.GetRpm()}, {"input_tpm", l.GetInputTpm()}, {"output_tpm", l.GetOutputTpm()}} {
		if f.v < 0 {
			c.ps.add(where, field+"."+f.name, "must not be negative, got %d", f.v)
		}
	}
	return routing.Limits{RPM: max(l.GetRpm(), 0), InputTPM: max(l.GetInputTpm(), 0), OutputTPM: max(l.GetOutputTpm(), 0)}
}

// wire converts the record's wire format, which must be set.
func (c *compiler) wire(where string, w configv1.WireFormat) routing.WireFormat {
	switch w {
	case configv1.WireFormat_WIRE_FORMAT_OPENAI:
		return routing.WireOpenAI
	case configv1.WireFormat_WIRE_FORMAT_ANTHROPIC:
		return routing.WireAnthropic
	case configv1.WireFormat_WIRE_FORMAT_BEDROCK:
		return routing.WireBedrock
	case configv1.WireFormat_WIRE_FORMAT_UNSPECIFIED:
		c.ps.add(where, "wire_format", "missing: must be %s", formats.WireFormats.StoredChoices())
	default:
		c.ps.add(where, "wire_format", "unknown value %d", int32(w))
	}
	return routing.WireUnknown
}

// models compiles the record's model list. A model whose kind is unspecified
// is a chat model: chat is what nearly every model is, and presets that omit
// the kind mean chat.
func (c *compiler) models(where string, in []*configv1.Model) map[string]routing.ModelKind {
	out := make(map[string]routing.ModelKind, len(in))
	for i, m := range in {
		field := fmt.Sprintf("models[%d]", i)
		if !validModelName(m.GetName()) {
			c.ps.add(where, field, "%s is not a model name (1-256 bytes, no spaces)", strconv.Quote(m.GetName()))
			continue
		}
		if _, dup := out[m.GetName()]; dup {
			c.ps.add(where, field, "model %s is listed twice", strconv.Quote(m.GetName()))
		}
		switch m.GetKind() {
		case configv1.ModelKind_MODEL_KIND_UNSPECIFIED, configv1.ModelKind_MODEL_KIND_CHAT:
			out[m.GetName()] = routing.KindChat
		case configv1.ModelKind_MODEL_KIND_EMBEDDINGS:
			out[m.GetName()] = routing.KindEmbeddings
		default:
			c.ps.add(where, field, "model %s has unknown kind %d", strconv.Quote(m.GetName()), int32(m.GetKind()))
		}
	}
	return out
}

// rateLimitKey reports whether k (lowercased) is a key rate_limit_headers may
// use: {requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}
// (R-HEAD-2).
func rateLimitKey(k string) bool {
	dim, field, ok := strings.Cut(k, "-")
	if dim == "input" || dim == "output" {
		var rest string
		rest, field, ok = strings.Cut(field, "-")
		dim += "-" + rest
	}
	if !ok {
		return false
	}
	switch dim {
	case "requests", "tokens", "input-tokens", "output-tokens":
	default:
		return false
	}
	switch field {
	case "limit", "remaining", "reset":
		return true
	}
	return false
}

// rateLimitHeaders copies the record's declared rate-limit header names,
// keys lowercased, reporting unknown keys and malformed header names.
func (c *compiler) rateLimitHeaders(where string, in map[string]string) map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]string, len(in))
	for _, k := range sortedKeys(in) {
		key := strings.ToLower(strings.TrimSpace(k))
		v := strings.TrimSpace(in[k])
		field := "rate_limit_headers[" + strconv.Quote(k) + "]"
		if !rateLimitKey(key) {
			c.ps.add(where, field, "unknown key: keys are {requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}")
		}
		if !validHeaderName(v) {
			c.ps.add(where, field, "%s is not a header name", strconv.Quote(v))
		}
		out[key] = v
	}
	return out
}

// recovery applies the ROUTING.md defaults to the record's failover
// settings: a field that is 0 or absent takes the default, except
// attempt_deadline, where a present zero duration disables the attempt
// deadline (R-FAIL-9) and only an absent one takes the default.
func (c *compiler) recovery(where string, in *configv1.Recovery) routing.Recovery {
	out := routing.DefaultRecovery()
	if in == nil {
		return out
	}
	if n := in.GetMaxAttempts(); n > 0 {
		out.MaxAttempts = int(n)
	}
	dur := func(field string, d *durationpb.Duration, dst *time.Duration, zeroDisables bool) {
		if d == nil {
			return
		}
		if err := d.CheckValid(); err != nil {
			c.ps.add(where, "recovery."+field, "%v", err)
			return
		}
		v := d.AsDuration()
		switch {
		case v < 0:
			c.ps.add(where, "recovery."+field, "must not be negative, got %v", v)
		case v > 0:
			*dst = v
		case zeroDisables:
			*dst = 0
		}
	}
	dur("call_deadline", in.GetCallDeadline(), &out.CallDeadline, false)
	dur("attempt_deadline", in.GetAttemptDeadline(), &out.AttemptDeadline, true)
	dur("cooldown_base", in.GetCooldownBase(), &out.CooldownBase, false)
	dur("cooldown_max", in.GetCooldownMax(), &out.CooldownMax, false)
	dur("max_wait", in.GetMaxWait(), &out.MaxWait, false)
	if out.CooldownBase > out.CooldownMax {
		c.ps.add(where, "recovery.cooldown_base", "%v is above cooldown_max %v", out.CooldownBase, out.CooldownMax)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
