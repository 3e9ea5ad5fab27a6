package compile

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	configv1 "weir.dev/proto/gen/weir/config/v1"

	"weir.dev/routing"
	"weir.dev/routing/rules"
)

var sprintf = fmt.Sprintf

// checkURL reports each R-SEC-2 problem of an upstream address (a base_url
// or an OAuth2 token_url); problems never echo the URL.
func (v *recordChecker) checkURL(l loc, raw string) {
	for _, p := range rules.CheckURL(raw, v.rules.ClusterOwned) {
		code := CodeInvalidURL
		switch p.Kind {
		case rules.URLNotHTTPS:
			code = CodeNotHTTPS
		case rules.URLPrivateAddress:
			code = CodePrivateAddress
		}
		v.add(l, code, "%s", p.Message)
	}
}

// Bounds of the declared limits that are not per minute (R-HEAD-6, R-CAP-1).
const (
	maxRPD         = 1_000_000_000
	maxMaxInFlight = 1_000_000
	maxDayZoneLen  = 64
)

// limits reports negative declared limits, and rpd or max_in_flight above
// their bounds (0 means none declared).
func (v *recordChecker) limits(l loc, in *configv1.Limits) {
	for _, f := range []struct {
		name string
		v    int64
		most int64 // 0: no upper bound
	}{
		{"rpm", in.GetRpm(), 0}, {"input_tpm", in.GetInputTpm(), 0}, {"output_tpm", in.GetOutputTpm(), 0},
		{"rpd", in.GetRpd(), maxRPD}, {"max_in_flight", in.GetMaxInFlight(), maxMaxInFlight},
	} {
		switch {
		case f.v < 0:
			v.add(l.at(f.name), CodeNegative, "must not be negative, got %d", f.v)
		case f.most > 0 && f.v > f.most:
			v.add(l.at(f.name), CodeOutOfRange, "must be 0-%d (0: none), got %d", f.most, f.v)
		}
	}
}

// dayZone checks the zone whose days count rpd (R-HEAD-6): empty (UTC) or
// an IANA zone name the time zone database knows ("America/Los_Angeles").
// "Local" is refused: it means the zone of whichever machine reads it.
func (v *recordChecker) dayZone(l loc, z string) {
	if z == "" {
		return
	}
	if len(z) > maxDayZoneLen || z == "Local" || !validZone(z) {
		v.add(l, CodeInvalidValue, "%s is not an IANA time zone (e.g. UTC, America/Los_Angeles)", strconv.Quote(truncate(z, maxDayZoneLen)))
	}
}

// validZone reports whether the time zone database knows z.
func validZone(z string) bool {
	_, err := time.LoadLocation(z)
	return err == nil
}

// truncate cuts s to at most n bytes for a problem text.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// tags checks a tag map: at most maxTags tags, keys and values 1-maxTagLen
// printable characters.
func (v *recordChecker) tags(l loc, tags map[string]string) {
	if len(tags) > maxTags {
		v.add(l, CodeTooMany, "at most %d tags, got %d", maxTags, len(tags))
	}
	for _, k := range sortedKeys(tags) {
		if !rules.ValidTagText(k) {
			v.add(l.at(key(k)), CodeInvalidValue, "a tag key must be 1-%d printable characters", rules.MaxTagLen)
		}
		if !rules.ValidTagText(tags[k]) {
			v.add(l.at(key(k)), CodeInvalidValue, "a tag value must be 1-%d printable characters", rules.MaxTagLen)
		}
	}
}

// allowedRegions checks a pool's region narrowing: names or globs.
func (v *recordChecker) allowedRegions(l loc, in []string) {
	if len(in) > maxRegionRules {
		v.add(l, CodeTooMany, "at most %d regions, got %d", maxRegionRules, len(in))
	}
	for i, p := range in {
		if !rules.ValidRegionPattern(p) {
			v.add(l.at(idx(i)), CodeInvalidValue, "%s %s", strconv.Quote(p), rules.RegionPatternRule)
		}
	}
}

// account checks a declared capacity group (R-ORDER-4): empty, or 1-128
// printable characters.
func (v *recordChecker) account(l loc, a string) {
	if a != "" && !rules.ValidText(a, maxAccountLen) {
		v.add(l, CodeInvalidValue, "must be 1-%d printable characters", maxAccountLen)
	}
}

// apiVersion checks an API version: empty, or 1-64 characters without
// spaces.
func (v *recordChecker) apiVersion(l loc, a string) {
	if a != "" && (len(a) > maxVersionLen || !rules.ValidModelName(a)) {
		v.add(l, CodeInvalidValue, "must be 1-%d characters without spaces", maxVersionLen)
	}
}

// rateLimitHeaders checks declared rate-limit header names (R-HEAD-2).
func (v *recordChecker) rateLimitHeaders(l loc, in map[string]string) {
	for _, k := range sortedKeys(in) {
		f := l.at(key(k))
		if !rules.ValidRateLimitKey(strings.ToLower(strings.TrimSpace(k))) {
			v.add(f, CodeInvalidValue, "unknown key %s: keys are %s", strconv.Quote(k), rules.RateLimitKeys)
		}
		if !rules.ValidHeaderName(strings.TrimSpace(in[k])) {
			v.add(f, CodeInvalidValue, "%s is not a header name", strconv.Quote(in[k]))
		}
	}
}

// recovery checks failover settings: durations valid, not negative, whole
// milliseconds (the unit the control plane stores), cooldown_base not
// above cooldown_max once defaults apply; max_attempts within range.
func (v *recordChecker) recovery(l loc, in *configv1.Recovery) {
	if in == nil {
		return
	}
	if n := in.GetMaxAttempts(); n > math.MaxInt32 {
		v.add(l.at("max_attempts"), CodeOutOfRange, "must be at most %d, got %d", math.MaxInt32, n)
	}
	got := map[string]time.Duration{}
	dur := func(name string, d *durationpb.Duration) {
		if d == nil {
			return
		}
		f := l.at(name)
		if err := d.CheckValid(); err != nil {
			v.add(f, CodeInvalidValue, "%v", err)
			return
		}
		switch x := d.AsDuration(); {
		case x < 0:
			v.add(f, CodeNegative, "must not be negative, got %v", x)
		case x%time.Millisecond != 0:
			v.add(f, CodeInvalidValue, "must be a whole number of milliseconds, got %v", x)
		default:
			got[name] = x
		}
	}
	dur("call_deadline", in.GetCallDeadline())
	dur("attempt_deadline", in.GetAttemptDeadline())
	dur("cooldown_base", in.GetCooldownBase())
	dur("cooldown_max", in.GetCooldownMax())
	dur("max_wait", in.GetMaxWait())
	def := routing.DefaultRecovery()
	base, most := def.CooldownBase, def.CooldownMax
	if d := got["cooldown_base"]; d > 0 {
		base = d
	}
	if d := got["cooldown_max"]; d > 0 {
		most = d
	}
	if base > most {
		v.add(l.at("cooldown_base"), CodeOutOfRange, "%v is above cooldown_max %v", base, most)
	}
}

// secretName checks a secret reference: a valid name of a secret that
// exists in the record owner's scope (when RecordRules.SecretKnown says).
// An empty name is not a reference.
func (v *recordChecker) secretName(l loc, name string) {
	if name == "" {
		return
	}
	if !rules.ValidName(name) {
		v.add(l, CodeInvalidName, "%s %s", strconv.Quote(name), rules.NameRule)
		return
	}
	if v.rules.SecretKnown != nil && !v.rules.SecretKnown(name) {
		v.add(l, CodeUnknownSecret, "no secret %s among %s: set it first with `weir secret set`", strconv.Quote(name), v.rules.SecretScope)
	}
}
