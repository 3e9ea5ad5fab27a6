package provider

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/formats"
)

// Env is what validation and warnings need to know besides the record.
type Env struct {
	// Secrets maps the name of each secret of the record's owner (the
	// tenant's secrets, or the cluster's for a managed record) to the hosts
	// it is bound to. nil skips the check that named secrets exist and the
	// secret_host_mismatch warning; an empty non-nil map means the owner has
	// none.
	Secrets map[string][]string
	// Rules are the owning tenant's data rules, for the rules_refuse_all
	// warning; nil skips it (managed records, which many tenants share, are
	// never checked).
	Rules *configv1.DataRules
}

// Validate checks the whole record r would be after a change and returns
// nil, or an error wrapping ErrInvalid and one *Problem for every rule it
// breaks (never just the first). It does not change r.
//
// Every rule of the edge's snapshot compiler holds here too, so that the
// edges never refuse a snapshot the control plane accepted; in addition:
//   - names are 1-64 of [a-z0-9_-], member names unique in the record;
//   - a plain record has a base_url and no members; a pool has members (at
//     most 16), no base_url and no limits of its own (its members declare
//     theirs);
//   - R-SEC-2: every base_url and token_url is an absolute https URL, plain
//     http only to loopback or on managed and internal records, and on
//     tenant records no literal private, link-local, multicast or
//     unspecified address;
//   - R-SEC-3: SigV4 auth needs an access key secret, a signing region and a
//     service; OAuth2 auth a token URL, a client id and a client secret
//     secret; API-key auth a key secret in effect; an auth sets no field of
//     another kind;
//   - models: 1-256, each 1-128 bytes without spaces, unique; a member's
//     models and model map keys are models of the record;
//   - prices: at most one per model, each a model the owner serves, no part
//     negative; a record price gives input and output; a member price gives
//     at least one part; R-COST-4: every price a member ends up with for a
//     model it serves, after merging with the record's, is whole (input,
//     output, cache read and, on anthropic and bedrock, cache write) — so a
//     member price where the record has none must be whole by itself;
//   - weights 1-10000, orders 1-100, limits and durations not negative,
//     durations whole milliseconds;
//   - regions 1-64 of [A-Za-z0-9_-]; allowed regions names or globs;
//   - at most 64 tags, keys and values 1-64 characters;
//   - every secret named exists in the owner's scope (when env.Secrets is
//     given).
func Validate(r *Record, env Env) error {
	v := &validator{r: r, env: env}
	v.record()
	if r.fieldMap != nil {
		for _, e := range v.ps.list {
			if p, ok := e.(*Problem); ok {
				p.Field = r.fieldMap(p.Field)
			}
		}
	}
	return v.ps.err()
}

type validator struct {
	ps  problems
	r   *Record
	env Env

	models     map[string]configv1.ModelKind
	recPrices  map[string]*configv1.Price
	recordAuth bool // some member (or the plain record itself) signs with the record's auth
}

// record checks the whole record: its name and wire format, models, shape
// (recordShape), own fields, prices, members and auth, reporting problems
// in that order.
func (v *validator) record() {
	r, s := v.r, v.r.Spec
	if !ValidName(r.Name) {
		v.ps.add(r.nameField(), CodeInvalidName, "%s %s", strconv.Quote(r.Name), nameRule)
	}
	if w := s.GetWireFormat(); w == configv1.WireFormat_WIRE_FORMAT_UNSPECIFIED {
		v.ps.add(r.specField("wire_format"), CodeRequired, "missing: must be %s (or give a preset)", formats.WireFormats.StoredChoices())
	} else if _, known := formats.WireFormats.ByEnum(w); !known {
		v.ps.add(r.specField("wire_format"), CodeInvalidValue, "unknown value %d", int32(w))
	}
	v.recordModels()
	v.recordShape()
	v.recordFields()
	v.recordPrices()

	if !r.Pool {
		v.recordAuth = true
		v.keySecretInEffect(r.specField("key_secret"), s.GetAuth(), s.GetKeySecret())
		v.mergedPrices(r.specField("prices"), nil, nil)
	}
	names := map[string]bool{}
	for _, m := range r.Members {
		if !ValidName(m.Name) {
			v.ps.add(m.nameField(), CodeInvalidName, "%s %s", strconv.Quote(m.Name), nameRule)
		} else if names[m.Name] {
			v.ps.add(m.nameField(), CodeDuplicate, "another member of the record is named %s", strconv.Quote(m.Name))
		}
		names[m.Name] = true
		v.member(m)
	}
	// The record's auth is checked, beyond its kind, only when something
	// signs with it: a pool whose members all bring their own auth never
	// does (the edge decides alike).
	switch k := s.GetAuth().GetKind(); {
	case k == configv1.AuthKind_AUTH_KIND_UNSPECIFIED:
		v.ps.add(r.specField("auth.kind"), CodeRequired, "missing: api_key, sigv4, oauth2 or none (or give a preset)")
	case v.recordAuth:
		v.auth(r.specField("auth"), s.GetAuth())
	}
}

// recordShape checks what makes the record a pool or a plain record: a
// pool has members (at most maxMembers), no base_url and no limits of its
// own; a plain record has a valid base_url and no members.
func (v *validator) recordShape() {
	r, s := v.r, v.r.Spec
	if r.Pool {
		if s.GetBaseUrl() != "" {
			v.ps.add(r.specField("base_url"), CodeNotAllowed, "a pool must not have a base_url: each member has its own")
		}
		if l := s.GetLimits(); l.GetRpm() != 0 || l.GetInputTpm() != 0 || l.GetOutputTpm() != 0 {
			v.ps.add(r.specField("limits"), CodeNotAllowed, "a pool has no limits of its own: each member declares its own")
		}
		switch n := len(r.Members); {
		case n == 0:
			v.ps.add(r.membersField(), CodeRequired, "a pool needs at least one member")
		case n > maxMembers:
			v.ps.add(r.membersField(), CodeTooMany, "a pool has at most %d members, got %d", maxMembers, n)
		}
		return
	}
	if s.GetBaseUrl() == "" {
		v.ps.add(r.specField("base_url"), CodeRequired, "missing: a plain record needs a base_url (a pool needs members)")
	} else {
		checkURL(&v.ps, r.specField("base_url"), s.GetBaseUrl(), r.clusterOwned())
	}
	if len(r.Members) > 0 {
		v.ps.add(r.membersField(), CodeNotAllowed, "a plain record has no members")
	}
}

// recordFields checks the record's fields each on its own, in this order:
// limits, region, tags, allowed_regions, rate_limit_headers, recovery,
// default_max_output, account, api_version and the key secret's name.
func (v *validator) recordFields() {
	r, s := v.r, v.r.Spec
	v.limits(r.specField("limits"), s.GetLimits())
	if reg := s.GetRegion(); reg != "" && !ValidRegion(reg) {
		v.ps.add(r.specField("region"), CodeInvalidValue, "%s %s", strconv.Quote(reg), regionRule)
	}
	v.tags(r.specField("tags"), s.GetTags())
	v.allowedRegions(r.specField("allowed_regions"), s.GetAllowedRegions())
	v.rateLimitHeaders(r.specField("rate_limit_headers"), s.GetRateLimitHeaders())
	v.recovery(r.specField("recovery"), s.GetRecovery())
	if n := s.GetDefaultMaxOutput(); n < 0 {
		v.ps.add(r.specField("default_max_output"), CodeNegative, "must not be negative, got %d", n)
	}
	if a := s.GetAccount(); a != "" && !validText(a, maxAccountLen) {
		v.ps.add(r.specField("account"), CodeInvalidValue, "must be 1-%d printable characters", maxAccountLen)
	}
	if a := s.GetApiVersion(); a != "" && !validToken(a, maxVersionLen) {
		v.ps.add(r.specField("api_version"), CodeInvalidValue, "must be 1-%d characters without spaces", maxVersionLen)
	}
	v.secretName(r.specField("key_secret"), s.GetKeySecret())
}

// recordModels checks the record's models and indexes them.
func (v *validator) recordModels() {
	r := v.r
	in := r.Spec.GetModels()
	v.models = make(map[string]configv1.ModelKind, len(in))
	switch n := len(in); {
	case n == 0:
		v.ps.add(r.specField("models"), CodeRequired, "missing: a record serves at least one model")
	case n > maxModels:
		v.ps.add(r.specField("models"), CodeTooMany, "at most %d models, got %d", maxModels, n)
	}
	for i, m := range in {
		field := r.specField("models" + idx(i))
		if !validModelName(m.GetName()) {
			v.ps.add(join(field, "name"), CodeInvalidValue, "%s is not a model name (1-%d bytes, no spaces)", strconv.Quote(m.GetName()), maxModelLen)
			continue
		}
		if _, dup := v.models[m.GetName()]; dup {
			v.ps.add(join(field, "name"), CodeDuplicate, "model %s is listed twice", strconv.Quote(m.GetName()))
		}
		switch k := m.GetKind(); k {
		case configv1.ModelKind_MODEL_KIND_UNSPECIFIED, configv1.ModelKind_MODEL_KIND_CHAT, configv1.ModelKind_MODEL_KIND_EMBEDDINGS:
		default:
			v.ps.add(join(field, "kind"), CodeInvalidValue, "unknown kind %d", int32(k))
		}
		v.models[m.GetName()] = m.GetKind()
	}
}

// recordPrices checks the record's own prices and indexes them by model.
// Whether they are whole is checked per member, after merging.
func (v *validator) recordPrices() {
	r := v.r
	v.recPrices = map[string]*configv1.Price{}
	for i, p := range r.Spec.GetPrices() {
		field := r.specField("prices" + idx(i))
		model := p.GetModel()
		if _, ok := v.models[model]; !ok {
			v.ps.add(join(field, "model"), CodeNotAModel, "%s is not a model of the record", strconv.Quote(model))
		}
		if _, dup := v.recPrices[model]; dup {
			v.ps.add(join(field, "model"), CodeDuplicate, "the model %s is priced twice", strconv.Quote(model))
			continue
		}
		v.priceSigns(field, p)
		if p.InputMicros == nil {
			v.ps.add(join(field, "input_micros"), CodeRequired, "missing: a record's price gives input and output")
		}
		if p.OutputMicros == nil {
			v.ps.add(join(field, "output_micros"), CodeRequired, "missing: a record's price gives input and output")
		}
		v.recPrices[model] = p
	}
}

// priceSigns reports every negative part of a price.
func (v *validator) priceSigns(field string, p *configv1.Price) {
	for _, part := range []struct {
		name string
		v    *int64
	}{
		{"input_micros", p.InputMicros},
		{"output_micros", p.OutputMicros},
		{"cache_read_micros", p.CacheReadMicros},
		{"cache_write_micros", p.CacheWriteMicros},
	} {
		if part.v != nil && *part.v < 0 {
			v.ps.add(join(field, part.name), CodeNegative, "must not be negative, got %d", *part.v)
		}
	}
}

// member checks one pool member: its own fields (memberFields), models
// and model map (memberModels), auth (memberAuth) and prices
// (memberPrices), reporting problems in that order.
func (v *validator) member(m *Member) {
	v.memberFields(m)
	served := v.memberModels(m)
	v.memberAuth(m)
	v.memberPrices(m, served)
}

// memberFields checks the member's fields each on its own, in this order:
// base_url, region, tags, limits, weight, order, account, api_version and
// key_secret.
func (v *validator) memberFields(m *Member) {
	r, s := v.r, m.Spec
	if s.GetBaseUrl() == "" {
		v.ps.add(m.specField("base_url"), CodeRequired, "missing: every pool member needs its own base_url")
	} else {
		checkURL(&v.ps, m.specField("base_url"), s.GetBaseUrl(), r.clusterOwned())
	}
	if s.Region != nil && s.GetRegion() != "" && !ValidRegion(s.GetRegion()) {
		v.ps.add(m.specField("region"), CodeInvalidValue, "%s %s", strconv.Quote(s.GetRegion()), regionRule)
	}
	v.tags(m.specField("tags"), s.GetTags())
	v.limits(m.specField("limits"), s.GetLimits())
	if w := s.GetWeight(); w > maxWeight {
		v.ps.add(m.specField("weight"), CodeOutOfRange, "must be 1-%d, got %d", maxWeight, w)
	}
	if o := s.GetOrder(); o > maxOrder {
		v.ps.add(m.specField("order"), CodeOutOfRange, "must be 1-%d, got %d", maxOrder, o)
	}
	if s.Account != nil && s.GetAccount() != "" && !validText(s.GetAccount(), maxAccountLen) {
		v.ps.add(m.specField("account"), CodeInvalidValue, "must be 1-%d printable characters", maxAccountLen)
	}
	if s.ApiVersion != nil && s.GetApiVersion() != "" && !validToken(s.GetApiVersion(), maxVersionLen) {
		v.ps.add(m.specField("api_version"), CodeInvalidValue, "must be 1-%d characters without spaces", maxVersionLen)
	}
	switch {
	case s.KeySecret != nil && s.GetKeySecret() == "":
		// The schema stores an absent key secret as NULL (inherit) and a
		// present one as a reference to a secret: "" can be neither.
		v.ps.add(m.specField("key_secret"), CodeInvalidName, "must name a secret when present; leave it unset to use the record's")
	case s.KeySecret != nil:
		v.secretName(m.specField("key_secret"), s.GetKeySecret())
	}
}

// memberModels checks that the models the member lists are a subset of
// the record's, each once, and that its model map maps models of the
// record to model names. It returns the models the member lists, nil when
// it lists none (it then serves all the record's).
func (v *validator) memberModels(m *Member) (served map[string]bool) {
	s := m.Spec
	if len(s.GetModels()) > 0 {
		served = make(map[string]bool, len(s.GetModels()))
		for i, name := range s.GetModels() {
			field := m.specField("models" + idx(i))
			if _, ok := v.models[name]; !ok {
				v.ps.add(field, CodeNotAModel, "%s is not a model of the record", strconv.Quote(name))
			} else if served[name] {
				v.ps.add(field, CodeDuplicate, "model %s is listed twice", strconv.Quote(name))
			}
			served[name] = true
		}
	}
	for _, k := range sortedKeys(s.GetModelMap()) {
		field := m.specField("model_map" + key(k))
		if _, ok := v.models[k]; !ok {
			v.ps.add(field, CodeNotAModel, "key %s is not a model of the record", strconv.Quote(k))
		}
		if val := s.GetModelMap()[k]; !validModelName(val) {
			v.ps.add(field, CodeInvalidValue, "%s maps to %s, which is not a model name (1-%d bytes, no spaces)", strconv.Quote(k), strconv.Quote(val), maxModelLen)
		}
	}
	return served
}

// memberAuth checks the auth the member signs with — its own when it
// names a kind or a header, else the record's as a whole (which then
// counts as used: v.recordAuth) — and that API-key auth has a key secret
// in effect.
func (v *validator) memberAuth(m *Member) {
	r, s := v.r, m.Spec
	auth := s.GetAuth()
	if memberHasOwnAuth(auth) {
		v.auth(m.specField("auth"), auth)
	} else {
		if authHasFields(auth) {
			v.ps.add(m.specField("auth"), CodeRequired, "sets fields but no kind or header, so the record's auth would be used and these ignored; name the kind")
		}
		auth = r.Spec.GetAuth()
		v.recordAuth = true
	}
	v.keySecretInEffect(m.specField("key_secret"), auth, inheritStr(s.KeySecret, r.Spec.GetKeySecret()))
}

// memberPrices checks the member's own prices — each of a model it serves
// (served, nil for all the record's), once, giving some part, none
// negative — then every price it ends up with (mergedPrices).
func (v *validator) memberPrices(m *Member, served map[string]bool) {
	seen := map[string]bool{}
	for i, p := range m.Spec.GetPrices() {
		field := m.specField("prices" + idx(i))
		model := p.GetModel()
		if _, ok := v.models[model]; !ok {
			v.ps.add(join(field, "model"), CodeNotAModel, "%s is not a model of the record", strconv.Quote(model))
		} else if served != nil && !served[model] {
			v.ps.add(join(field, "model"), CodeNotAModel, "%s is not among the member's models", strconv.Quote(model))
		}
		if seen[model] {
			v.ps.add(join(field, "model"), CodeDuplicate, "the model %s is priced twice", strconv.Quote(model))
			continue
		}
		seen[model] = true
		if p.InputMicros == nil && p.OutputMicros == nil && p.CacheReadMicros == nil && p.CacheWriteMicros == nil {
			v.ps.add(field, CodeRequired, "gives no part: give input, output, cache read or cache write, or remove the price")
		}
		v.priceSigns(field, p)
	}
	v.mergedPrices(m.specField("prices"), m, served)
}

// mergedPrices checks that every price m ends up with for a model it serves
// is whole (R-COST-4); m nil means the plain record's own endpoint. field
// is the path of the owner's prices list.
func (v *validator) mergedPrices(field string, m *Member, served map[string]bool) {
	wire := v.r.Spec.GetWireFormat()
	var own []*configv1.Price
	if m != nil {
		own = m.Spec.GetPrices()
	}
	models := map[string]bool{}
	for model := range v.recPrices {
		models[model] = true
	}
	ownIndex := map[string]int{}
	for i, p := range own {
		models[p.GetModel()] = true
		if _, dup := ownIndex[p.GetModel()]; !dup {
			ownIndex[p.GetModel()] = i
		}
	}
	for _, model := range sortedKeys(models) {
		if _, ok := v.models[model]; !ok {
			continue // reported where the price is
		}
		if served != nil && !served[model] {
			continue // never charged on this member
		}
		var ownPrice *configv1.Price
		if i, ok := ownIndex[model]; ok {
			ownPrice = own[i]
		}
		recPrice, recordHas := v.recPrices[model]
		missing := missingParts(mergePrice(recPrice, ownPrice), wire)
		if missing == "" {
			continue
		}
		at := field
		if i, ok := ownIndex[model]; ok {
			at = field + idx(i)
		} else if m == nil {
			at = field + idx(slices.IndexFunc(v.r.Spec.GetPrices(), func(p *configv1.Price) bool { return p.GetModel() == model }))
		}
		q := strconv.Quote(model)
		// The messages speak of the parts as people name them (the CLI's
		// --price M=IN,OUT,CR,CW, the console's columns), never in proto
		// field names; the field path says where the price is.
		switch {
		case m == nil:
			v.ps.add(at, CodePriceNotWhole, "the price of %s lacks %s: a price must be whole, or those tokens would cost nothing (R-COST-4); give 0 for a part the provider does not charge", q, missing)
		case !recordHas:
			v.ps.add(at, CodePriceNotWhole, "a member price must be whole when the record has no price for %s: it lacks %s, and those tokens would cost nothing (R-COST-4); give them (0 for a part the provider does not charge), or price the model on the record", q, missing)
		case ownPrice != nil:
			v.ps.add(at, CodePriceNotWhole, "the price of %s lacks %s even with the record's price for it: a price must be whole, or those tokens would cost nothing (R-COST-4)", q, missing)
		default:
			v.ps.add(at, CodePriceNotWhole, "the price of %s lacks %s: the record's price lacks it and the member gives none, and those tokens would cost nothing (R-COST-4)", q, missing)
		}
	}
}

// mergePrice returns the record's price with every part the member's gives
// replacing the record's (R-COST-4); either may be nil.
func mergePrice(rec, own *configv1.Price) *configv1.Price {
	out := &configv1.Price{Model: rec.GetModel()}
	if own != nil {
		out.Model = own.GetModel()
	}
	pick := func(o, r *int64) *int64 {
		if o != nil {
			v := *o
			return &v
		}
		if r != nil {
			v := *r
			return &v
		}
		return nil
	}
	for _, f := range priceParts {
		*f.ptr(out) = pick(partOf(own, f), partOf(rec, f))
	}
	return out
}

// pricePart names one part of a price and reaches its field.
type pricePart struct {
	name string // "input", "output", "cache_read", "cache_write"
	ptr  func(*configv1.Price) **int64
}

var priceParts = []pricePart{
	{"input", func(p *configv1.Price) **int64 { return &p.InputMicros }},
	{"output", func(p *configv1.Price) **int64 { return &p.OutputMicros }},
	{"cache_read", func(p *configv1.Price) **int64 { return &p.CacheReadMicros }},
	{"cache_write", func(p *configv1.Price) **int64 { return &p.CacheWriteMicros }},
}

// partOf returns one part of p, nil when p is nil or lacks it.
func partOf(p *configv1.Price, f pricePart) *int64 {
	if p == nil {
		return nil
	}
	return *f.ptr(p)
}

// missingParts names the parts a price lacks to be whole on a wire format,
// in words ("cache read and cache write"), or "" when it is whole: input,
// output, cache read, and cache write on the formats that bill cache
// writes (R-COST-4).
func missingParts(p *configv1.Price, w configv1.WireFormat) string {
	var miss []string
	if p.InputMicros == nil {
		miss = append(miss, "input")
	}
	if p.OutputMicros == nil {
		miss = append(miss, "output")
	}
	if p.CacheReadMicros == nil {
		miss = append(miss, "cache read")
	}
	if p.CacheWriteMicros == nil && needsCacheWrite(w) {
		miss = append(miss, "cache write")
	}
	switch len(miss) {
	case 0:
		return ""
	case 1:
		return miss[0]
	}
	return strings.Join(miss[:len(miss)-1], ", ") + " and " + miss[len(miss)-1]
}

func needsCacheWrite(w configv1.WireFormat) bool {
	return w == configv1.WireFormat_WIRE_FORMAT_ANTHROPIC || w == configv1.WireFormat_WIRE_FORMAT_BEDROCK
}

// auth checks an Auth message where it is declared (field is its path): its
// kind is known, it sets no field of another kind, its header is a header
// name, SigV4 and OAuth2 auth carry what they need to sign (R-SEC-3), the
// token URL follows R-SEC-2, and named secrets exist.
func (v *validator) auth(field string, a *configv1.Auth) {
	kind := a.GetKind()
	if _, known := configv1.AuthKind_name[int32(kind)]; !known {
		v.ps.add(join(field, "kind"), CodeInvalidValue, "unknown value %d", int32(kind))
		return
	}
	apiKey := kind == configv1.AuthKind_AUTH_KIND_API_KEY
	sigv4 := kind == configv1.AuthKind_AUTH_KIND_SIGV4
	oauth2 := kind == configv1.AuthKind_AUTH_KIND_OAUTH2
	kindName := authKindName(kind)
	if kindName == "" {
		kindName = "unspecified"
	}
	foreign := func(name, value string, ok bool) {
		if value != "" && !ok {
			v.ps.add(join(field, name), CodeNotAllowed, "set, but the auth kind is %s", kindName)
		}
	}
	foreign("header", a.GetHeader(), apiKey)
	foreign("aws_service", a.GetAwsService(), sigv4)
	foreign("aws_region", a.GetAwsRegion(), sigv4)
	foreign("access_key_secret", a.GetAccessKeySecret(), sigv4)
	foreign("token_url", a.GetTokenUrl(), oauth2)
	foreign("client_id", a.GetClientId(), oauth2)
	foreign("client_secret_secret", a.GetClientSecretSecret(), oauth2)
	if len(a.GetScopes()) > 0 && !oauth2 {
		v.ps.add(join(field, "scopes"), CodeNotAllowed, "set, but the auth kind is %s", kindName)
	}
	if h := a.GetHeader(); h != "" && apiKey && !validHeaderName(h) {
		v.ps.add(join(field, "header"), CodeInvalidValue, "%s is not a header name", strconv.Quote(h))
	}
	need := func(name, value string) {
		if value == "" {
			v.ps.add(join(field, name), CodeRequired, "missing: %s auth needs it (R-SEC-3)", kindName)
		}
	}
	switch {
	case sigv4:
		need("access_key_secret", a.GetAccessKeySecret())
		need("aws_region", a.GetAwsRegion())
		need("aws_service", a.GetAwsService())
		v.secretName(join(field, "access_key_secret"), a.GetAccessKeySecret())
		if reg := a.GetAwsRegion(); reg != "" && !ValidRegion(reg) {
			v.ps.add(join(field, "aws_region"), CodeInvalidValue, "%s %s", strconv.Quote(reg), regionRule)
		}
	case oauth2:
		need("token_url", a.GetTokenUrl())
		need("client_id", a.GetClientId())
		need("client_secret_secret", a.GetClientSecretSecret())
		if u := a.GetTokenUrl(); u != "" {
			checkURL(&v.ps, join(field, "token_url"), u, v.r.clusterOwned())
		}
		v.secretName(join(field, "client_secret_secret"), a.GetClientSecretSecret())
	}
}

// keySecretInEffect reports API-key auth with no key secret in effect: such
// an endpoint could never sign (the edge refuses it alike).
func (v *validator) keySecretInEffect(field string, a *configv1.Auth, keySecret string) {
	if a.GetKind() == configv1.AuthKind_AUTH_KIND_API_KEY && keySecret == "" {
		v.ps.add(field, CodeRequired, "missing: api-key auth needs a key secret")
	}
}

// secretName checks a secret reference: a valid name of a secret that
// exists in the record owner's scope. An empty name is not a reference.
func (v *validator) secretName(field, name string) {
	if name == "" {
		return
	}
	if !ValidName(name) {
		v.ps.add(field, CodeInvalidName, "%s %s", strconv.Quote(name), nameRule)
		return
	}
	if v.env.Secrets == nil {
		return
	}
	if _, ok := v.env.Secrets[name]; !ok {
		scope := "the tenant's secrets"
		if v.r.Managed {
			scope = "the cluster's secrets"
		}
		v.ps.add(field, CodeUnknownSecret, "no secret %s among %s: set it first with `weir secret set`", strconv.Quote(name), scope)
	}
}

// limits reports negative declared limits.
func (v *validator) limits(field string, l *configv1.Limits) {
	for _, f := range []struct {
		name string
		v    int64
	}{{"rpm", l.GetRpm()}, {"input_tpm", l.GetInputTpm()}, {"output_tpm", l.GetOutputTpm()}} {
		if f.v < 0 {
			v.ps.add(join(field, f.name), CodeNegative, "must not be negative, got %d", f.v)
		}
	}
}

// tags checks a tag map: at most 64 tags, keys and values 1-64 printable
// characters.
func (v *validator) tags(field string, tags map[string]string) {
	if len(tags) > maxTags {
		v.ps.add(field, CodeTooMany, "at most %d tags, got %d", maxTags, len(tags))
	}
	for _, k := range sortedKeys(tags) {
		if !validText(k, maxTagLen) {
			v.ps.add(field+key(k), CodeInvalidValue, "a tag key must be 1-%d printable characters", maxTagLen)
		}
		if !validText(tags[k], maxTagLen) {
			v.ps.add(field+key(k), CodeInvalidValue, "a tag value must be 1-%d printable characters", maxTagLen)
		}
	}
}

// allowedRegions checks a pool's region narrowing: names or globs.
func (v *validator) allowedRegions(field string, in []string) {
	if len(in) > maxRegionRules {
		v.ps.add(field, CodeTooMany, "at most %d regions, got %d", maxRegionRules, len(in))
	}
	for i, p := range in {
		if !validRegionPattern(p) {
			v.ps.add(field+idx(i), CodeInvalidValue, "%s must be a region name or a glob such as \"eu-*\": 1-64 of [A-Za-z0-9_-*?]", strconv.Quote(p))
		}
	}
}

// rateLimitKey reports whether k is a key rate_limit_headers may use:
// {requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}
// (R-HEAD-2).
func rateLimitKey(k string) bool {
	for _, dim := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		for _, f := range []string{"limit", "remaining", "reset"} {
			if k == dim+"-"+f {
				return true
			}
		}
	}
	return false
}

func (v *validator) rateLimitHeaders(field string, in map[string]string) {
	for _, k := range sortedKeys(in) {
		f := field + key(k)
		if !rateLimitKey(strings.ToLower(strings.TrimSpace(k))) {
			v.ps.add(f, CodeInvalidValue, "unknown key %s: keys are {requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}", strconv.Quote(k))
		}
		if !validHeaderName(strings.TrimSpace(in[k])) {
			v.ps.add(f, CodeInvalidValue, "%s is not a header name", strconv.Quote(in[k]))
		}
	}
}

// recovery checks failover settings: durations valid, not negative, whole
// milliseconds (the unit they are stored in), cooldown_base not above
// cooldown_max; max_attempts within range.
func (v *validator) recovery(field string, in *configv1.Recovery) {
	if in == nil {
		return
	}
	if n := in.GetMaxAttempts(); n > math.MaxInt32 {
		v.ps.add(join(field, "max_attempts"), CodeOutOfRange, "must be at most %d, got %d", math.MaxInt32, n)
	}
	got := map[string]time.Duration{}
	dur := func(name string, d *durationpb.Duration) {
		if d == nil {
			return
		}
		f := join(field, name)
		if err := d.CheckValid(); err != nil {
			v.ps.add(f, CodeInvalidValue, "%v", err)
			return
		}
		x := d.AsDuration()
		switch {
		case x < 0:
			v.ps.add(f, CodeNegative, "must not be negative, got %v", x)
		case x%time.Millisecond != 0:
			v.ps.add(f, CodeInvalidValue, "must be a whole number of milliseconds, got %v", x)
		default:
			got[name] = x
		}
	}
	dur("call_deadline", in.GetCallDeadline())
	dur("attempt_deadline", in.GetAttemptDeadline())
	dur("cooldown_base", in.GetCooldownBase())
	dur("cooldown_max", in.GetCooldownMax())
	dur("max_wait", in.GetMaxWait())
	base, max := 10*time.Second, time.Hour // ROUTING.md defaults (R-FAIL-2)
	if d, ok := got["cooldown_base"]; ok && d > 0 {
		base = d
	}
	if d, ok := got["cooldown_max"]; ok && d > 0 {
		max = d
	}
	if base > max {
		v.ps.add(join(field, "cooldown_base"), CodeOutOfRange, "%v is above cooldown_max %v", base, max)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
