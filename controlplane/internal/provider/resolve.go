package provider

import (
	"maps"
	"slices"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing"
	"weir.dev/routing/compile"
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
	fieldWireFormat  = "wire_format"
)

// resolveID is the id a record is compiled under here: the compiler needs
// one, and it only names the compiled members (ids no view shows).
const resolveID = "resolve"

// resolution is a record as the edges' compiler resolves it: the values of
// this file come from it, so that what a member inherits, its defaults and
// its merged prices are decided in one place, routing/compile.
type resolution struct {
	config   *configv1.ProviderRecord // the record as compiled (ConfigRecord)
	rec      *routing.Record
	problems []*compile.Problem // why the edges would refuse it; nil: none
}

// compiled compiles r with the edges' compiler. A record that breaks the
// compiler's rules is still resolved as far as it goes (compile.Resolve),
// with the problems kept.
func compiled(r *Record) resolution {
	cr := r.ConfigRecord()
	cr.Id = resolveID
	rec, problems := compile.Resolve(cr, r.Managed)
	return resolution{config: cr, rec: rec, problems: problems}
}

// member returns the compiled member of m and its weir.config.v1 form; m nil
// means a plain record's own endpoint, the member "primary" (config nil). A
// member the compiler did not produce comes back empty.
func (res resolution) member(m *Member) (*routing.Member, *configv1.Member) {
	if m == nil {
		if len(res.rec.Members) > 0 && !res.rec.Pool {
			return res.rec.Members[0], nil
		}
		return &routing.Member{Record: res.rec}, nil
	}
	i := slices.IndexFunc(res.config.GetMembers(), func(cm *configv1.Member) bool { return cm.GetName() == m.Name })
	if i < 0 || i >= len(res.rec.Members) || !res.rec.Pool {
		return &routing.Member{Record: res.rec}, &configv1.Member{}
	}
	return res.rec.Members[i], res.config.GetMembers()[i]
}

// Effective returns member m of record r with everything it inherits
// resolved: what an edge will use (ROUTING.md "Member"), as the edges'
// compiler resolves it (routing/compile: auth, key_secret, region,
// retains_data, tags, limits, weight, order, model_map, off, api_version,
// the models served and the merged prices all come from the compiled
// member). m nil means the plain record's own endpoint, the member
// "primary". r and m are not changed, and the result shares no memory with
// them.
//
// Account keeps the API's contract (EffectiveMember.account): the declared
// account, else "secret:<name>" of the secret the member signs with, else
// empty. The compiler's last fallback, the member's own compiled id (a
// group of one), is shown as empty: that id is internal to the edge and
// groups nothing.
//
// InheritedFields and InheritedTagKeys answer which fields the member left
// unset, a question of the stored specs, not of resolution (see
// inheritedFields).
//
// A record the compiler refuses (Warnings reports each problem as
// record_refused) is still shown: every member as the compiler resolves it
// before refusing: a field a problem is about as given (an unknown wire
// format or auth kind as none), everything else as it would be. The edges route on none of it
// until the problems are fixed.
func Effective(r *Record, m *Member) *adminv1.EffectiveMember {
	return compiled(r).effective(r, m)
}

// effective is Effective on a resolution of r.
func (res resolution) effective(r *Record, m *Member) *adminv1.EffectiveMember {
	cm, cfg := res.member(m)
	ms := &adminv1.PoolMemberSpec{}
	if m != nil {
		ms = m.Spec
	}
	e := &adminv1.EffectiveMember{
		BaseUrl:          cm.BaseURL,
		Auth:             authProto(cm.Auth),
		KeySecret:        cm.KeySecret,
		Region:           cm.Region,
		RetainsData:      cm.RetainsData,
		Tags:             maps.Clone(cm.Tags),
		Limits:           limitsProto(cm.Limits),
		Weight:           cm.Weight,
		Order:            cm.Order,
		Models:           modelsServed(r, cm),
		ModelMap:         maps.Clone(cm.ModelMap),
		Off:              cm.Off,
		Account:          cm.Account,
		ApiVersion:       cm.APIVersion,
		InheritedFields:  inheritedFields(r.Spec, ms, m == nil),
		InheritedTagKeys: inheritedTagKeys(r.Spec.GetTags(), ms.GetTags()),
		Prices:           declaredPrices(res.prices(r, m)),
		WireFormat:       wireProto(cm.Wire),
		DayZone:          r.Spec.GetDayZone(),
	}
	if cm.Account == cm.ID && compile.DeclaredAccount(res.config, cfg) == "" {
		e.Account = ""
	}
	return e
}

// inheritedFields names the fields of EffectiveMember whose value came from
// the record: those the member's spec ms leaves unset (an optional field
// absent, an auth naming no kind and no header, no limit declared, no
// models listed), and for a plain record's own endpoint (primary) base_url
// and limits. limits and account count only when the record has a value
// to give.
func inheritedFields(rs *adminv1.ProviderSpec, ms *adminv1.PoolMemberSpec, primary bool) []string {
	var out []string
	add := func(field string, inherited bool) {
		if inherited {
			out = append(out, field)
		}
	}
	add(fieldBaseURL, primary)
	add(fieldAuth, !memberHasOwnAuth(ms.GetAuth()))
	add(fieldKeySecret, ms.KeySecret == nil)
	add(fieldRegion, ms.Region == nil)
	add(fieldRetainsData, ms.RetainsData == nil)
	add(fieldLimits, !declaresLimits(ms.GetLimits()) && (primary || declaresLimits(rs.GetLimits())))
	add(fieldModels, len(ms.GetModels()) == 0)
	add(fieldAccount, ms.Account == nil && rs.GetAccount() != "")
	add(fieldAPIVersion, ms.ApiVersion == nil)
	add(fieldWireFormat, ms.GetWireFormat() == configv1.WireFormat_WIRE_FORMAT_UNSPECIFIED)
	return out
}

// inheritedTagKeys returns the keys of the record's tags the member does
// not set, sorted; nil when there are none.
func inheritedTagKeys(rec, own map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(rec)) {
		if _, mine := own[k]; !mine {
			out = append(out, k)
		}
	}
	return out
}

// modelsServed returns the names of the record's models the compiled
// member serves, in the record's order.
func modelsServed(r *Record, cm *routing.Member) []string {
	var out []string
	for _, md := range r.Spec.GetModels() {
		if cm.Record != nil && cm.Serves(md.GetName()) {
			out = append(out, md.GetName())
		}
	}
	return out
}

// wireProto is a compiled wire format in the admin API's form.
func wireProto(w routing.WireFormat) configv1.WireFormat {
	switch w {
	case routing.WireOpenAI:
		return configv1.WireFormat_WIRE_FORMAT_OPENAI
	case routing.WireAnthropic:
		return configv1.WireFormat_WIRE_FORMAT_ANTHROPIC
	case routing.WireBedrock:
		return configv1.WireFormat_WIRE_FORMAT_BEDROCK
	case routing.WireGemini:
		return configv1.WireFormat_WIRE_FORMAT_GEMINI
	}
	return configv1.WireFormat_WIRE_FORMAT_UNSPECIFIED
}

// authKinds are the admin API's names of the compiled auth kinds; a kind
// not listed (routing.AuthNone) is AUTH_KIND_NONE.
var authKinds = map[routing.AuthKind]configv1.AuthKind{
	routing.AuthAPIKey: configv1.AuthKind_AUTH_KIND_API_KEY,
	routing.AuthSigV4:  configv1.AuthKind_AUTH_KIND_SIGV4,
	routing.AuthOAuth2: configv1.AuthKind_AUTH_KIND_OAUTH2,

	routing.AuthGoogleServiceAccount: configv1.AuthKind_AUTH_KIND_GOOGLE_SERVICE_ACCOUNT,
}

// authProto is a compiled auth in the admin API's form.
func authProto(a routing.Auth) *configv1.Auth {
	kind, ok := authKinds[a.Kind]
	if !ok {
		kind = configv1.AuthKind_AUTH_KIND_NONE
	}
	return &configv1.Auth{
		Kind:               kind,
		Header:             a.Header,
		AwsService:         a.AWSService,
		AwsRegion:          a.AWSRegion,
		AccessKeySecret:    a.AccessKeySecret,
		TokenUrl:           a.TokenURL,
		ClientId:           a.ClientID,
		ClientSecretSecret: a.ClientSecret,
		Scopes:             slices.Clone(a.Scopes),
	}
}

// limitsProto is compiled limits in the admin API's form: nil when none is
// declared.
func limitsProto(l routing.Limits) *configv1.Limits {
	if l == (routing.Limits{}) {
		return nil
	}
	return &configv1.Limits{Rpm: l.RPM, InputTpm: l.InputTPM, OutputTpm: l.OutputTPM, Rpd: l.RPD, MaxInFlight: l.MaxInFlight}
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
// price is the compiled member's (routing/compile merges the member's parts
// over the record's, R-COST-4); InheritedParts names the parts the member
// leaves to the record's price. Whole is true when the price has input,
// output, cache read and, on the anthropic and bedrock wire formats, cache
// write (the member's own format when it has one).
func ResolvedPrices(r *Record, m *Member) []*adminv1.ResolvedPrice {
	return compiled(r).prices(r, m)
}

// prices is ResolvedPrices on a resolution of r.
func (res resolution) prices(r *Record, m *Member) []*adminv1.ResolvedPrice {
	cm, _ := res.member(m)
	var own []*configv1.Price
	if m != nil {
		own = m.Spec.GetPrices()
	}
	names := modelsServed(r, cm)
	slices.Sort(names)
	names = slices.Compact(names)
	// Cache writes are billed by the endpoint's own format (R-FMT-4): a
	// gemini member of an anthropic record needs no cache-write price.
	wire := r.Spec.GetWireFormat()
	if m != nil && m.Spec.GetWireFormat() != configv1.WireFormat_WIRE_FORMAT_UNSPECIFIED {
		wire = m.Spec.GetWireFormat()
	}
	out := make([]*adminv1.ResolvedPrice, 0, len(names))
	for _, name := range names {
		p := priceProto(name, cm.Prices[name])
		rp := &adminv1.ResolvedPrice{Price: p, Whole: missingParts(p, wire) == ""}
		rec, mine := findPrice(r.Spec.GetPrices(), name), findPrice(own, name)
		for _, f := range priceParts {
			if partOf(mine, f) == nil && partOf(rec, f) != nil {
				rp.InheritedParts = append(rp.InheritedParts, f.name)
			}
		}
		out = append(out, rp)
	}
	return out
}

// priceProto is a compiled price of model in the admin API's form: a part
// the price lacks is unset.
func priceProto(model string, p routing.Price) *configv1.Price {
	out := &configv1.Price{Model: model}
	part := func(has bool, v routing.Micros) *int64 {
		if !has {
			return nil
		}
		return ptr(int64(v))
	}
	out.InputMicros = part(p.HasInput, p.Input)
	out.OutputMicros = part(p.HasOutput, p.Output)
	out.CacheReadMicros = part(p.HasCacheRead, p.CacheRead)
	out.CacheWriteMicros = part(p.HasCacheWrite, p.CacheWrite)
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
	return l.GetRpm() != 0 || l.GetInputTpm() != 0 || l.GetOutputTpm() != 0 || l.GetRpd() != 0 || l.GetMaxInFlight() != 0
}

// signingSecret is the secret an endpoint signs with: the key secret for
// API-key and google-service-account auth, the access key secret for
// SigV4, the client secret for OAuth2; "" for no auth.
func signingSecret(a *configv1.Auth, keySecret string) string {
	switch a.GetKind() {
	case configv1.AuthKind_AUTH_KIND_API_KEY, configv1.AuthKind_AUTH_KIND_GOOGLE_SERVICE_ACCOUNT:
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
		ao, bo := max(a.Spec.GetOrder(), routing.DefaultOrder), max(b.Spec.GetOrder(), routing.DefaultOrder)
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
