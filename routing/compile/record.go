package compile

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	configv1 "weir.dev/proto/gen/weir/config/v1"

	"weir.dev/routing"
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
		if r.GetId() == "" {
			c.ps.add(where, "id", "missing")
		}
		c.checkRecord(where, r, managed)
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
//
// record only converts: the rules a record must follow are CheckRecord's,
// which records applies first; what record makes of a record that breaks
// them is never used.
func (c *compiler) record(where string, r *configv1.ProviderRecord, managed bool) *routing.Record {
	rec := &routing.Record{
		ID:               r.GetId(),
		Name:             r.GetName(),
		TenantID:         c.tenantID,
		Managed:          managed,
		Internal:         r.GetInternal(),
		Wire:             wire(r.GetWireFormat()),
		Models:           models(r.GetModels()),
		Pool:             len(r.GetMembers()) > 0,
		AllowedRegions:   stringsOrNil(r.GetAllowedRegions()),
		RateLimitHeaders: rateLimitHeaders(r.GetRateLimitHeaders()),
		Recovery:         recovery(r.GetRecovery()),
		DefaultMaxOutput: routing.DefaultMaxOutput,
		Priority:         r.GetPriority(),
		DayZone:          dayZone(r.GetDayZone()),
	}
	if managed {
		rec.TenantID = ""
	}
	if n := r.GetDefaultMaxOutput(); n > 0 {
		rec.DefaultMaxOutput = n
	}
	if ts := r.GetCreatedAt(); ts != nil {
		if err := ts.CheckValid(); err != nil {
			c.ps.add(where, "created_at", "%v", err)
		} else {
			rec.CreatedAt = ts.AsTime()
		}
	}
	rc := &recordCtx{proto: r, rec: rec, limits: limits(r.GetLimits()), prices: recordPrices(r.GetPrices())}
	if !rec.Pool {
		rec.Members = []*routing.Member{plainMember(rc)}
	} else {
		poolMembers(rc)
	}
	return rec
}

// checkRecord adds every problem CheckRecord finds in r, located by where
// (and the member's name).
func (c *compiler) checkRecord(where string, r *configv1.ProviderRecord, managed bool) {
	for _, p := range CheckRecord(r, RecordRules{ClusterOwned: managed}) {
		w := where
		if p.Member >= 0 {
			w += " " + objectWhere("member", r.GetMembers()[p.Member].GetName(), p.Member)
		}
		c.ps.list = append(c.ps.list, &Problem{Where: w, Field: p.Field, Code: p.Code, Msg: p.Msg})
	}
}

// recordCtx is what the members of one record are compiled against.
type recordCtx struct {
	proto  *configv1.ProviderRecord
	rec    *routing.Record
	limits routing.Limits
	prices map[string]*configv1.Price
}

// poolMembers compiles a pool's members into rc.rec.Members, in order.
func poolMembers(rc *recordCtx) {
	for _, mp := range rc.proto.GetMembers() {
		if mp == nil {
			continue
		}
		m := poolMember(rc, mp)
		m.Index = len(rc.rec.Members)
		rc.rec.Members = append(rc.rec.Members, m)
	}
}

// plainMember compiles a plain record's one member, rules.PrimaryMember, from the
// record's own fields (model_map included). It serves every model of the
// record at the record's prices, with weight 1 and order 1.
func plainMember(rc *recordCtx) *routing.Member {
	r := rc.proto
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
		Weight:      routing.DefaultWeight,
		Order:       routing.DefaultOrder,
		ModelMap:    copyMap(r.GetModelMap()),
		APIVersion:  r.GetApiVersion(),
		Wire:        rc.rec.Wire,
	}
	m.Auth = resolveAuth(r.GetAuth(), m.KeySecret, m.Wire)
	m.Account = account(r.GetAccount(), m)
	m.Prices = memberPrices(rc, nil)
	return m
}

// poolMember compiles one member of a pool. What the member leaves unset it
// takes from its record (ROUTING.md "Member"):
//   - auth as a whole, when the member's auth names no kind and no header;
//   - key_secret, region, retains_data, account and api_version, when the
//     optional field is absent (a present empty string is kept: it means
//     "none", e.g. no region);
//   - tags: the record's, overlaid with the member's;
//   - limits: never; a pool has none of its own (CheckRecord), each member
//     declares its own deployment's;
//   - prices: per model, the record's price with the parts the member gives
//     replaced (R-COST-4).
//
// weight and order default to 1 when 0. The member's own id field is not
// used: the member's id in the table is "<record id>/<member name>", which
// every edge derives alike.
func poolMember(rc *recordCtx, mp *configv1.Member) *routing.Member {
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
		Limits:      limits(mp.GetLimits()),
		Weight:      routing.DefaultWeight,
		Order:       routing.DefaultOrder,
		ModelMap:    copyMap(mp.GetModelMap()),
		Off:         mp.GetOff(),
		APIVersion:  inherit(mp.ApiVersion, r.GetApiVersion()),
		Wire:        rc.rec.Wire,
	}
	if w := wire(mp.GetWireFormat()); w != routing.WireUnknown {
		m.Wire = w // the member's own format (R-FMT-4)
	}
	if w := mp.GetWeight(); w > 0 {
		m.Weight = w
	}
	if o := mp.GetOrder(); o > 0 {
		m.Order = o
	}

	// Models the member serves: a subset of the record's.
	m.Models = stringSet(mp.GetModels())

	// Auth: the member's own when it names a kind or a header, else the
	// record's as a whole.
	auth := mp.GetAuth()
	if !ownsAuth(auth) {
		auth = r.GetAuth()
	}
	m.Auth = resolveAuth(auth, m.KeySecret, m.Wire)
	m.Account = account(inherit(mp.Account, r.GetAccount()), m)
	m.Prices = memberPrices(rc, mp.GetPrices())
	return m
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
	case routing.AuthGoogleServiceAccount:
		secret = m.KeySecret
	}
	if secret != "" {
		return "secret:" + secret
	}
	return m.ID
}

// limits converts declared limits; negative ones (a problem CheckRecord
// reports) count as none.
func limits(l *configv1.Limits) routing.Limits {
	return routing.Limits{RPM: max(l.GetRpm(), 0), InputTPM: max(l.GetInputTpm(), 0), OutputTPM: max(l.GetOutputTpm(), 0),
		RPD: max(l.GetRpd(), 0), MaxInFlight: max(l.GetMaxInFlight(), 0)}
}

// dayZone loads the record's day_zone (R-HEAD-6): UTC when empty or when
// the zone does not load (a problem CheckRecord reports).
func dayZone(name string) *time.Location {
	if name == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	return loc
}

// wire converts the record's wire format; WireUnknown when unset or unknown.
func wire(w configv1.WireFormat) routing.WireFormat {
	switch w {
	case configv1.WireFormat_WIRE_FORMAT_OPENAI:
		return routing.WireOpenAI
	case configv1.WireFormat_WIRE_FORMAT_ANTHROPIC:
		return routing.WireAnthropic
	case configv1.WireFormat_WIRE_FORMAT_BEDROCK:
		return routing.WireBedrock
	case configv1.WireFormat_WIRE_FORMAT_GEMINI:
		return routing.WireGemini
	}
	return routing.WireUnknown
}

// models converts the record's model list. A model whose kind is
// unspecified is a chat model: chat is what nearly every model is, and
// presets that omit the kind mean chat.
func models(in []*configv1.Model) map[string]routing.ModelKind {
	out := make(map[string]routing.ModelKind, len(in))
	for _, m := range in {
		out[m.GetName()] = routing.KindChat
		if m.GetKind() == configv1.ModelKind_MODEL_KIND_EMBEDDINGS {
			out[m.GetName()] = routing.KindEmbeddings
		}
	}
	return out
}

// rateLimitHeaders copies the record's declared rate-limit header names,
// keys lowercased and both sides trimmed.
func rateLimitHeaders(in map[string]string) map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	return out
}

// recovery applies the ROUTING.md defaults to the record's failover
// settings: a field that is 0 or absent takes the default, except
// attempt_deadline, where a present zero duration disables the attempt
// deadline (R-FAIL-9) and only an absent one takes the default. Invalid or
// negative durations (problems CheckRecord reports) are ignored.
func recovery(in *configv1.Recovery) routing.Recovery {
	out := routing.DefaultRecovery()
	if in == nil {
		return out
	}
	if n := in.GetMaxAttempts(); n > 0 {
		out.MaxAttempts = int(n)
	}
	dur := func(d *durationpb.Duration, dst *time.Duration, zeroDisables bool) {
		if d == nil || d.CheckValid() != nil {
			return
		}
		switch v := d.AsDuration(); {
		case v > 0:
			*dst = v
		case v == 0 && zeroDisables:
			*dst = 0
		}
	}
	dur(in.GetCallDeadline(), &out.CallDeadline, false)
	dur(in.GetAttemptDeadline(), &out.AttemptDeadline, true)
	dur(in.GetCooldownBase(), &out.CooldownBase, false)
	dur(in.GetCooldownMax(), &out.CooldownMax, false)
	dur(in.GetMaxWait(), &out.MaxWait, false)
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
