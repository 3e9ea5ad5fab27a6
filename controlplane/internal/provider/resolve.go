package provider

import (
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// Names of EffectiveMember fields, as inherited_fields lists them (in this
// order).
const (
	fieldBaseURL     = "base_url"
	fieldAuth        = "auth"
	fieldKeySecret   = "key_secret"
	fieldRegion      = "region"
	fieldRetainsData = "retains_data"
	fieldLimits      = "limits"
	fieldModels      = "models"
	fieldAccount     = "account"
	fieldAPIVersion  = "api_version"
)

// Effective returns member m of record r with everything it inherits
// resolved: what an edge will use (ROUTING.md "Member"). m nil means the
// plain record's own endpoint, the member "primary", which takes every field
// from the record. r and m are not changed, and the result shares no memory
// with them.
//
// What a member does not set it takes from its record: auth as a whole when
// it names no kind and no header; key_secret, region, retains_data, account
// and api_version when the optional field is absent (a present empty value
// is kept and means "none"); limits when it declares none; models when it
// lists no subset. Tags are the record's overlaid with the member's. Prices
// are merged per model and part (R-COST-4). Weight and order default to 1.
// InheritedFields names every field whose value came from the record, and
// InheritedTagKeys every tag whose value did.
//
// Account is the declared account (the member's, else the record's), else
// "secret:<name>" of the secret the member signs with (the key secret for
// API-key auth, the access key secret for SigV4, the client secret for
// OAuth2), else empty.
func Effective(r *Record, m *Member) *adminv1.EffectiveMember {
	rs := r.Spec
	ms := &adminv1.PoolMemberSpec{}
	if m != nil {
		ms = m.Spec
	}
	var inherited []string
	inherit := func(field string) { inherited = append(inherited, field) }

	e := &adminv1.EffectiveMember{
		BaseUrl:  ms.GetBaseUrl(),
		Weight:   max(ms.GetWeight(), 1),
		Order:    max(ms.GetOrder(), 1),
		ModelMap: maps.Clone(ms.GetModelMap()),
		Off:      ms.GetOff(),
	}
	if m == nil {
		e.BaseUrl = rs.GetBaseUrl()
		inherit(fieldBaseURL)
	}
	resolveSigning(e, rs, ms, inherit)
	resolvePlacement(e, rs, ms, inherit)
	resolveCapacity(e, rs, ms, m == nil, inherit)
	resolveAccount(e, rs, ms, inherit)
	if ms.ApiVersion != nil {
		e.ApiVersion = ms.GetApiVersion()
	} else {
		e.ApiVersion = rs.GetApiVersion()
		inherit(fieldAPIVersion)
	}
	e.InheritedFields = inherited
	e.Tags, e.InheritedTagKeys = mergeTags(rs.GetTags(), ms.GetTags())
	e.Prices = declaredPrices(ResolvedPrices(r, m))
	return e
}

// resolveSigning sets e's auth (the member's own when it names a kind or
// a header, else the record's as a whole) and key_secret (the member's
// when present), calling inherit for each taken from the record, in that
// order. ms is the member's spec, empty for a plain record's endpoint.
func resolveSigning(e *adminv1.EffectiveMember, rs *adminv1.ProviderSpec, ms *adminv1.PoolMemberSpec, inherit func(field string)) {
	if memberHasOwnAuth(ms.GetAuth()) {
		e.Auth = cloneAuth(ms.GetAuth())
	} else {
		e.Auth = cloneAuth(rs.GetAuth())
		inherit(fieldAuth)
	}
	if ms.KeySecret != nil {
		e.KeySecret = ms.GetKeySecret()
	} else {
		e.KeySecret = rs.GetKeySecret()
		inherit(fieldKeySecret)
	}
}

// resolvePlacement sets e's region and retains_data, each the member's
// when present, else the record's (calling inherit), in that order.
func resolvePlacement(e *adminv1.EffectiveMember, rs *adminv1.ProviderSpec, ms *adminv1.PoolMemberSpec, inherit func(field string)) {
	if ms.Region != nil {
		e.Region = ms.GetRegion()
	} else {
		e.Region = rs.GetRegion()
		inherit(fieldRegion)
	}
	if ms.RetainsData != nil {
		e.RetainsData = ms.GetRetainsData()
	} else {
		e.RetainsData = rs.GetRetainsData()
		inherit(fieldRetainsData)
	}
}

// resolveCapacity sets e's limits (copies of the member's when it declares
// any, else of the record's) and models (the member's subset, else all the
// record's), calling inherit for each taken from the record, in that
// order; limits count as inherited on a plain record's endpoint (primary)
// always, on a member only when the record declares some.
func resolveCapacity(e *adminv1.EffectiveMember, rs *adminv1.ProviderSpec, ms *adminv1.PoolMemberSpec, primary bool, inherit func(field string)) {
	if declaresLimits(ms.GetLimits()) {
		e.Limits = proto.Clone(ms.GetLimits()).(*configv1.Limits)
	} else {
		if l := rs.GetLimits(); l != nil {
			e.Limits = proto.Clone(l).(*configv1.Limits)
		}
		if primary || declaresLimits(rs.GetLimits()) {
			inherit(fieldLimits)
		}
	}
	if len(ms.GetModels()) > 0 {
		e.Models = slices.Clone(ms.GetModels())
	} else {
		for _, md := range rs.GetModels() {
			e.Models = append(e.Models, md.GetName())
		}
		inherit(fieldModels)
	}
}

// resolveAccount sets e's account as Effective describes it; e's auth and
// key secret must be resolved already. It calls inherit when the account
// is the record's declared one.
func resolveAccount(e *adminv1.EffectiveMember, rs *adminv1.ProviderSpec, ms *adminv1.PoolMemberSpec, inherit func(field string)) {
	switch {
	case ms.Account != nil && ms.GetAccount() != "":
		e.Account = ms.GetAccount()
	case ms.Account == nil && rs.GetAccount() != "":
		e.Account = rs.GetAccount()
		inherit(fieldAccount)
	default:
		if s := signingSecret(e.GetAuth(), e.GetKeySecret()); s != "" {
			e.Account = "secret:" + s
		}
	}
}

// mergeTags returns the record's tags overlaid with the member's, and the
// keys, sorted, whose value came from the record; nil and nil when
// neither has tags.
func mergeTags(rec, own map[string]string) (map[string]string, []string) {
	if len(rec)+len(own) == 0 {
		return nil, nil
	}
	tags := make(map[string]string, len(rec)+len(own))
	for k, v := range rec {
		tags[k] = v
	}
	for k, v := range own {
		tags[k] = v
	}
	var inherited []string
	for _, k := range slices.Sorted(maps.Keys(rec)) {
		if _, mine := own[k]; !mine {
			inherited = append(inherited, k)
		}
	}
	return tags, inherited
}

// declaredPrices returns the prices of rps that give at least one part, in
// order (nil when none does).
func declaredPrices(rps []*adminv1.ResolvedPrice) []*adminv1.ResolvedPrice {
	var out []*adminv1.ResolvedPrice
	for _, rp := range rps {
		if rp.GetPrice().InputMicros != nil || rp.GetPrice().OutputMicros != nil ||
			rp.GetPrice().CacheReadMicros != nil || rp.GetPrice().CacheWriteMicros != nil {
			out = append(out, rp)
		}
	}
	return out
}

// ResolvedPrices returns member m's effective price for every model it
// serves, by model name, including models without any price (an empty
// price, whole false); m nil means the plain record's own endpoint. Each
// price is the record's price for the model with every part the member
// gives replacing the record's (R-COST-4); InheritedParts names the parts
// taken from the record. Whole is true when the price has input, output,
// cache read and, on the anthropic and bedrock wire formats, cache write.
func ResolvedPrices(r *Record, m *Member) []*adminv1.ResolvedPrice {
	served := r.Spec.GetModels()
	var subset map[string]bool
	var own []*configv1.Price
	if m != nil {
		own = m.Spec.GetPrices()
		if len(m.Spec.GetModels()) > 0 {
			subset = map[string]bool{}
			for _, name := range m.Spec.GetModels() {
				subset[name] = true
			}
		}
	}
	var names []string
	for _, md := range served {
		if subset == nil || subset[md.GetName()] {
			names = append(names, md.GetName())
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	out := make([]*adminv1.ResolvedPrice, 0, len(names))
	for _, name := range names {
		rec := findPrice(r.Spec.GetPrices(), name)
		mine := findPrice(own, name)
		merged := mergePrice(rec, mine)
		merged.Model = name
		rp := &adminv1.ResolvedPrice{Price: merged}
		for _, f := range priceParts {
			if partOf(mine, f) == nil && partOf(rec, f) != nil {
				rp.InheritedParts = append(rp.InheritedParts, f.name)
			}
		}
		rp.Whole = missingParts(merged, r.Spec.GetWireFormat()) == ""
		out = append(out, rp)
	}
	return out
}

// findPrice returns the first price of model in ps, or nil.
func findPrice(ps []*configv1.Price, model string) *configv1.Price {
	for _, p := range ps {
		if p.GetModel() == model {
			return p
		}
	}
	return nil
}

// declaresLimits reports whether any limit is declared (not 0).
func declaresLimits(l *configv1.Limits) bool {
	return l.GetRpm() != 0 || l.GetInputTpm() != 0 || l.GetOutputTpm() != 0
}

// signingSecret is the secret an endpoint signs with: the key secret for
// API-key auth, the access key secret for SigV4, the client secret for
// OAuth2; "" for no auth.
func signingSecret(a *configv1.Auth, keySecret string) string {
	switch a.GetKind() {
	case configv1.AuthKind_AUTH_KIND_API_KEY:
		return keySecret
	case configv1.AuthKind_AUTH_KIND_SIGV4:
		return a.GetAccessKeySecret()
	case configv1.AuthKind_AUTH_KIND_OAUTH2:
		return a.GetClientSecretSecret()
	}
	return ""
}

// sortedMembers returns r's members by order, then name: the order
// every listing uses.
func sortedMembers(r *Record) []*Member {
	out := slices.Clone(r.Members)
	slices.SortFunc(out, func(a, b *Member) int {
		ao, bo := max(a.Spec.GetOrder(), 1), max(b.Spec.GetOrder(), 1)
		if ao != bo {
			if ao < bo {
				return -1
			}
			return 1
		}
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}
