package compile

import (
	"slices"
	"strconv"

	configv1 "weir.dev/proto/gen/weir/config/v1"

	"weir.dev/routing/formats"
	"weir.dev/routing/rules"
)

// member checks one pool member: its own fields, models and model map,
// auth and prices, in that order.
func (v *recordChecker) member(l loc, m *configv1.Member) {
	v.memberFields(l, m)
	served := v.memberModels(l, m)
	v.memberAuth(l, m)
	v.memberPrices(l, m, served)
}

// memberFields checks the member's fields each on its own, in this order:
// wire_format, base_url, region, tags, limits, weight, order, account, api_version and
// key_secret.
func (v *recordChecker) memberFields(l loc, m *configv1.Member) {
	if w := m.GetWireFormat(); w != configv1.WireFormat_WIRE_FORMAT_UNSPECIFIED {
		if _, known := formats.WireFormats.ByEnum(w); !known {
			v.add(l.at("wire_format"), CodeInvalidValue, "unknown value %d", int32(w))
		}
	}
	if m.GetBaseUrl() == "" {
		v.add(l.at("base_url"), CodeRequired, "missing: every pool member needs its own base_url")
	} else {
		v.checkURL(l.at("base_url"), m.GetBaseUrl())
	}
	if m.Region != nil && m.GetRegion() != "" && !rules.ValidRegion(m.GetRegion()) {
		v.add(l.at("region"), CodeInvalidValue, "%s %s", strconv.Quote(m.GetRegion()), rules.RegionRule)
	}
	v.tags(l.at("tags"), m.GetTags())
	v.limits(l.at("limits"), m.GetLimits())
	if w := m.GetWeight(); w > maxWeight {
		v.add(l.at("weight"), CodeOutOfRange, "must be 1-%d, got %d", maxWeight, w)
	}
	if o := m.GetOrder(); o > maxOrder {
		v.add(l.at("order"), CodeOutOfRange, "must be 1-%d, got %d", maxOrder, o)
	}
	v.account(l.at("account"), m.GetAccount())
	v.apiVersion(l.at("api_version"), m.GetApiVersion())
	switch {
	case m.KeySecret != nil && m.GetKeySecret() == "":
		// An absent key secret means "inherit" and a present one names a
		// secret: "" can be neither.
		v.add(l.at("key_secret"), CodeInvalidName, "must name a secret when present; leave it unset to use the record's")
	case m.KeySecret != nil:
		v.secretName(l.at("key_secret"), m.GetKeySecret())
	}
}

// memberModels checks that the models the member lists are models of the
// record, each once, and its model map. It returns the models the member
// lists, nil when it lists none (it then serves all the record's).
func (v *recordChecker) memberModels(l loc, m *configv1.Member) (served map[string]bool) {
	if len(m.GetModels()) > 0 {
		served = make(map[string]bool, len(m.GetModels()))
		for i, name := range m.GetModels() {
			if _, ok := v.models[name]; !ok {
				v.add(l.at("models", idx(i)), CodeNotAModel, "%s is not a model of the record", strconv.Quote(name))
			} else if served[name] {
				v.add(l.at("models", idx(i)), CodeDuplicate, "model %s is listed twice", strconv.Quote(name))
			}
			served[name] = true
		}
	}
	v.modelMap(l, m.GetModelMap())
	return served
}

// modelMap checks a model map (a plain record's or a member's): every key
// is a model of the record and every value a model name.
func (v *recordChecker) modelMap(l loc, mm map[string]string) {
	for _, k := range sortedKeys(mm) {
		f := l.at("model_map", key(k))
		if _, ok := v.models[k]; !ok {
			v.add(f, CodeNotAModel, "key %s is not a model of the record", strconv.Quote(k))
		}
		if val := mm[k]; !rules.ValidModelName(val) {
			v.add(f, CodeInvalidValue, "%s maps to %s, which is not a model name (1-%d bytes, no spaces)", strconv.Quote(k), strconv.Quote(val), rules.MaxModelLen)
		}
	}
}

// memberAuth checks the auth the member signs with — its own when it names
// a kind or a header, else the record's as a whole (which then counts as
// used) — and that API-key auth has a key secret in effect.
func (v *recordChecker) memberAuth(l loc, m *configv1.Member) {
	auth := m.GetAuth()
	kindAt := l.at("auth", "kind")
	if ownsAuth(auth) {
		v.auth(l.at("auth"), auth)
	} else {
		kindAt = l.at("wire_format") // the record's auth, at odds with the member's own format
		if authHasFields(auth) {
			v.add(l.at("auth"), CodeRequired, "sets fields but no kind or header, so the record's auth would be used and these ignored; name the kind")
		}
		auth = v.r.GetAuth()
		v.recordAuth = true
	}
	v.endpointAuth(l, kindAt, auth, inherit(m.KeySecret, v.r.GetKeySecret()), v.memberWire(m))
}

// memberWire is the wire format a member speaks: its own when set, else
// its record's (R-FMT-4).
func (v *recordChecker) memberWire(m *configv1.Member) configv1.WireFormat {
	if w := m.GetWireFormat(); w != configv1.WireFormat_WIRE_FORMAT_UNSPECIFIED {
		return w
	}
	return v.r.GetWireFormat()
}

// embeddingsReach reports each embeddings model no endpoint of the record
// can serve: embeddings go to openai endpoints as sent and to gemini ones
// translated, and to no other format (R-FMT-7). A record whose formats are
// missing or unknown, or a pool without members, is reported elsewhere.
func (v *recordChecker) embeddingsReach() {
	r := v.r
	for i, model := range r.GetModels() {
		if model.GetKind() != configv1.ModelKind_MODEL_KIND_EMBEDDINGS {
			continue
		}
		var formatsSeen, reach bool
		if !v.pool {
			w := r.GetWireFormat()
			formatsSeen, reach = w != configv1.WireFormat_WIRE_FORMAT_UNSPECIFIED, embeddingsWire(w)
		}
		for _, m := range r.GetMembers() {
			if len(m.GetModels()) > 0 && !slices.Contains(m.GetModels(), model.GetName()) {
				continue
			}
			w := v.memberWire(m)
			formatsSeen = formatsSeen || w != configv1.WireFormat_WIRE_FORMAT_UNSPECIFIED
			reach = reach || embeddingsWire(w)
		}
		if formatsSeen && !reach {
			v.add(recordLoc.at("models", idx(i), "kind"), CodeWireMismatch,
				"embeddings model %s needs an endpoint of format openai or gemini, and none serves it (R-FMT-7)", strconv.Quote(model.GetName()))
		}
	}
}

// embeddingsWire reports whether endpoints of a wire format serve
// embeddings (R-FMT-7).
func embeddingsWire(w configv1.WireFormat) bool {
	return w == configv1.WireFormat_WIRE_FORMAT_OPENAI || w == configv1.WireFormat_WIRE_FORMAT_GEMINI
}

// ownsAuth reports whether a member's auth replaces the record's: it names
// a kind or a header (ROUTING.md "Member").
func ownsAuth(a *configv1.Auth) bool {
	return a.GetKind() != configv1.AuthKind_AUTH_KIND_UNSPECIFIED || a.GetHeader() != ""
}
