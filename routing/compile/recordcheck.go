package compile

import (
	"strconv"

	configv1 "weir.dev/proto/gen/weir/config/v1"

	"weir.dev/routing/formats"
	"weir.dev/routing/rules"
)

// Limits on a provider record's sizes (ROUTING.md, provider_types.proto).
const (
	maxMembers     = 16
	maxWeight      = 10000
	maxOrder       = 100
	maxModels      = 256
	maxTags        = 64
	maxAccountLen  = 128
	maxVersionLen  = 64
	maxRegionRules = 64
)

// RecordRules are what CheckRecord needs to know besides the record itself.
type RecordRules struct {
	// ClusterOwned records (managed, or internal) may use plain http and
	// literal private addresses (R-SEC-2); r.Internal counts as well.
	ClusterOwned bool
	// Pool marks a record kept as a pool even when it has no members (the
	// control plane's record kind); otherwise a record is a pool exactly
	// when it has members, as in a snapshot.
	Pool bool
	// NamedAuthKind requires the record's auth to name its kind. The admin
	// API asks for it (a preset names it); a snapshot may leave it
	// unspecified, which means API-key auth when a key secret is in effect
	// and no auth otherwise.
	NamedAuthKind bool
	// SecretKnown, when set, reports whether a secret of that name exists
	// in the record owner's scope; every secret the record names must. nil
	// skips the check (an edge cannot know).
	SecretKnown func(name string) bool
	// SecretScope names that scope in problem texts ("the tenant's
	// secrets").
	SecretScope string
}

// RecordProblem is one rule a provider record breaks.
type RecordProblem struct {
	// Member is the index in the record's members of the member at fault,
	// or -1 when the problem is the record's own.
	Member int
	// Field is the path of the field at fault within the record (Member -1)
	// or the member, in proto field names with list indexes and map keys in
	// brackets: "base_url", "prices[2].cache_read_micros", "tags[team]",
	// "auth.aws_region", "members" for the member list as a whole, "" for
	// the object as a whole.
	Field string
	// Code is one of the Code* constants.
	Code string
	// Msg says what is wrong in a phrase a person can act on. It never
	// echoes a URL, which may hold a secret by mistake.
	Msg string
}

// CheckRecord reports every rule of the config format that one provider
// record breaks, in a stable order (the record's own fields, its members
// in order, then the record's auth), never just the first. It is the one
// statement of these rules: the edge's compiler applies it to every record
// of a snapshot, and the control plane to the record a change would
// produce, so the control plane never accepts what an edge refuses.
//
// The rules, beyond each field's own format:
//   - names are 1-64 of [a-z0-9_-], member names unique in the record;
//   - a plain record has a base_url and no members; a pool has members (at
//     most 16), no base_url, no limits and no model_map of its own;
//   - R-SEC-2: every base_url and token_url is an absolute https URL, plain
//     http only to loopback or on cluster-owned records, and on tenant
//     records no literal private, link-local or unspecified address;
//   - R-SEC-3: SigV4 auth needs an access key secret, a signing region and
//     a service; OAuth2 auth a token URL, a client id and a client secret;
//     API-key auth a key secret in effect; an auth sets no field of another
//     kind. The record's auth is checked beyond its kind only when some
//     endpoint signs with it;
//   - models: 1-256, each a model name, unique; a member's models and model
//     map keys are models of the record;
//   - prices: at most one per model, of a model the owner serves, no part
//     negative; a record price gives input and output, a member price some
//     part; R-COST-4: every price a member ends up with for a model it
//     serves, merged with the record's, is whole;
//   - R-FMT-4: a member's own wire_format, when set, is a known one; its
//     prices, auth and models are judged by the format it speaks;
//   - google-service-account auth needs a key secret in effect (it holds
//     the service account's JSON key) and only signs for gemini endpoints;
//   - R-FMT-7: an embeddings model is served by some endpoint of format
//     openai or gemini;
//   - R-HEAD-6, R-CAP-1: rpd 0-1e9 and max_in_flight 0-1e6 (0: none);
//     day_zone empty or an IANA zone; a pool declares no limits of its own,
//     these included (its members do; day_zone is the record's);
//   - weights 1-10000, orders 1-100, limits and durations not negative,
//     durations whole milliseconds, cooldown_base not above cooldown_max;
//   - at most 64 tags of 1-64 characters; regions and region globs as
//     routing/rules says.
func CheckRecord(r *configv1.ProviderRecord, rules RecordRules) []RecordProblem {
	v := &recordChecker{r: r, rules: rules, pool: rules.Pool || len(r.GetMembers()) > 0}
	v.rules.ClusterOwned = rules.ClusterOwned || r.GetInternal()
	v.record()
	return v.out
}

// recordChecker walks one record for CheckRecord.
type recordChecker struct {
	r     *configv1.ProviderRecord
	rules RecordRules
	pool  bool
	out   []RecordProblem

	models     map[string]configv1.ModelKind
	recPrices  map[string]*configv1.Price
	recordAuth bool // some endpoint signs with the record's auth
}

// loc is where a problem is: the record (member -1) or one member, and the
// path of a field within it.
type loc struct {
	member int
	path   string
}

// at returns the location of a field below l: at("auth", "kind").
func (l loc) at(parts ...string) loc {
	for _, p := range parts {
		switch {
		case p == "":
		case l.path == "" || p[0] == '[':
			l.path += p
		default:
			l.path += "." + p
		}
	}
	return l
}

func (v *recordChecker) add(l loc, code, format string, args ...any) {
	v.out = append(v.out, RecordProblem{Member: l.member, Field: l.path, Code: code, Msg: sprintf(format, args...)})
}

var recordLoc = loc{member: -1}

// record checks the whole record: name and wire format, models, shape,
// own fields, prices, members, then the auth the record's endpoints sign
// with.
func (v *recordChecker) record() {
	r := v.r
	if !rules.ValidName(r.GetName()) {
		v.add(recordLoc.at("name"), CodeInvalidName, "%s %s", strconv.Quote(r.GetName()), rules.NameRule)
	}
	if w := r.GetWireFormat(); w == configv1.WireFormat_WIRE_FORMAT_UNSPECIFIED {
		v.add(recordLoc.at("wire_format"), CodeRequired, "missing: must be %s (or give a preset)", formats.WireFormats.StoredChoices())
	} else if _, known := formats.WireFormats.ByEnum(w); !known {
		v.add(recordLoc.at("wire_format"), CodeInvalidValue, "unknown value %d", int32(w))
	}
	v.recordModels()
	v.recordShape()
	v.recordFields()
	v.recordPrices()
	if !v.pool {
		v.recordAuth = true
		v.endpointAuth(recordLoc, recordLoc.at("auth", "kind"), r.GetAuth(), r.GetKeySecret(), r.GetWireFormat())
		v.modelMap(recordLoc, r.GetModelMap())
		v.mergedPrices(recordLoc.at("prices"), -1, nil)
	}
	v.members()
	v.embeddingsReach()
	switch k := r.GetAuth().GetKind(); {
	case k == configv1.AuthKind_AUTH_KIND_UNSPECIFIED && v.rules.NamedAuthKind:
		v.add(recordLoc.at("auth", "kind"), CodeRequired, "missing: api_key, sigv4, oauth2, google_service_account or none (or give a preset)")
	case v.recordAuth:
		v.auth(recordLoc.at("auth"), r.GetAuth())
	}
}

// members checks each member: its name (valid, unique) and the member as a
// whole.
func (v *recordChecker) members() {
	names := map[string]bool{}
	for i, m := range v.r.GetMembers() {
		l := loc{member: i}
		if m == nil {
			v.add(l, CodeRequired, "missing")
			continue
		}
		if !rules.ValidName(m.GetName()) {
			v.add(l.at("name"), CodeInvalidName, "%s %s", strconv.Quote(m.GetName()), rules.NameRule)
		} else if names[m.GetName()] {
			v.add(l.at("name"), CodeDuplicate, "another member of the record is named %s", strconv.Quote(m.GetName()))
		}
		names[m.GetName()] = true
		v.member(l, m)
	}
}

// recordShape checks what makes the record a pool or a plain record: a
// pool has members (at most maxMembers), no base_url, no limits and no
// model map of its own; a plain record has a valid base_url.
func (v *recordChecker) recordShape() {
	r := v.r
	if !v.pool {
		if r.GetBaseUrl() == "" {
			v.add(recordLoc.at("base_url"), CodeRequired, "missing: a plain record needs a base_url (a pool needs members)")
		} else {
			v.checkURL(recordLoc.at("base_url"), r.GetBaseUrl())
		}
		return
	}
	if r.GetBaseUrl() != "" {
		v.add(recordLoc.at("base_url"), CodeNotAllowed, "a pool must not have a base_url: each member has its own")
	}
	if l := r.GetLimits(); l.GetRpm() != 0 || l.GetInputTpm() != 0 || l.GetOutputTpm() != 0 || l.GetRpd() != 0 || l.GetMaxInFlight() != 0 {
		v.add(recordLoc.at("limits"), CodeNotAllowed, "a pool has no limits of its own: each member declares its own")
	}
	if len(r.GetModelMap()) > 0 {
		v.add(recordLoc.at("model_map"), CodeNotAllowed, "is for plain records: each member of a pool has its own model_map")
	}
	switch n := len(r.GetMembers()); {
	case n == 0:
		v.add(recordLoc.at("members"), CodeRequired, "a pool needs at least one member")
	case n > maxMembers:
		v.add(recordLoc.at("members"), CodeTooMany, "a pool has at most %d members, got %d", maxMembers, n)
	}
}

// recordFields checks the record's fields each on its own, in this order:
// limits, day_zone, region, tags, allowed_regions, rate_limit_headers, recovery,
// default_max_output, account, api_version and the key secret's name.
func (v *recordChecker) recordFields() {
	r := v.r
	v.limits(recordLoc.at("limits"), r.GetLimits())
	v.dayZone(recordLoc.at("day_zone"), r.GetDayZone())
	if reg := r.GetRegion(); reg != "" && !rules.ValidRegion(reg) {
		v.add(recordLoc.at("region"), CodeInvalidValue, "%s %s", strconv.Quote(reg), rules.RegionRule)
	}
	v.tags(recordLoc.at("tags"), r.GetTags())
	v.allowedRegions(recordLoc.at("allowed_regions"), r.GetAllowedRegions())
	v.rateLimitHeaders(recordLoc.at("rate_limit_headers"), r.GetRateLimitHeaders())
	v.recovery(recordLoc.at("recovery"), r.GetRecovery())
	if n := r.GetDefaultMaxOutput(); n < 0 {
		v.add(recordLoc.at("default_max_output"), CodeNegative, "must not be negative, got %d", n)
	}
	v.account(recordLoc.at("account"), r.GetAccount())
	v.apiVersion(recordLoc.at("api_version"), r.GetApiVersion())
	v.secretName(recordLoc.at("key_secret"), r.GetKeySecret())
}

// recordModels checks the record's models and indexes them.
func (v *recordChecker) recordModels() {
	in := v.r.GetModels()
	v.models = make(map[string]configv1.ModelKind, len(in))
	switch n := len(in); {
	case n == 0:
		v.add(recordLoc.at("models"), CodeRequired, "missing: a record serves at least one model")
	case n > maxModels:
		v.add(recordLoc.at("models"), CodeTooMany, "at most %d models, got %d", maxModels, n)
	}
	for i, m := range in {
		l := recordLoc.at("models", idx(i))
		if !rules.ValidModelName(m.GetName()) {
			v.add(l.at("name"), CodeInvalidValue, "%s is not a model name (1-%d bytes, no spaces)", strconv.Quote(m.GetName()), rules.MaxModelLen)
			continue
		}
		if _, dup := v.models[m.GetName()]; dup {
			v.add(l.at("name"), CodeDuplicate, "model %s is listed twice", strconv.Quote(m.GetName()))
		}
		switch k := m.GetKind(); k {
		case configv1.ModelKind_MODEL_KIND_UNSPECIFIED, configv1.ModelKind_MODEL_KIND_CHAT, configv1.ModelKind_MODEL_KIND_EMBEDDINGS:
		default:
			v.add(l.at("kind"), CodeInvalidValue, "model %s has unknown kind %d", strconv.Quote(m.GetName()), int32(k))
		}
		v.models[m.GetName()] = m.GetKind()
	}
}

// idx formats a list index for a field path: "[3]".
func idx(i int) string { return "[" + strconv.Itoa(i) + "]" }

// key formats a map key for a field path: "[gpt-x]".
func key(k string) string { return "[" + k + "]" }
