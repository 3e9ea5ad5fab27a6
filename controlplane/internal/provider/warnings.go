package provider

import (
	"fmt"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"weir.dev/controlplane/internal/sakey"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/compile"
	"weir.dev/routing/rules"
)

// Warning codes (common.proto Warning.code).
const (
	WarnSharedKeySecret   = "shared_key_secret"
	WarnSharedHost        = "shared_host"
	WarnSecretHostMissing = "secret_host_mismatch"
	WarnModelUnpriced     = "model_unpriced"
	WarnRulesRefuseAll    = "rules_refuse_all"
	WarnRecordRefused     = "record_refused"
)

// Warnings returns the record's current warnings, in a fixed order:
// record_refused, one for each problem the edges' compiler refuses the record
// for (routing/compile; the edges then keep routing on their last snapshot),
// then R-SEC-4
// shared_key_secret (two or more members sign with the same secret: a key
// secret, SigV4 access key secret or OAuth2 client secret) and shared_host
// (two or more members reach the same host name, ports aside) — each
// leaving out members the operator has declared apart, i.e. whose declared
// accounts (the member's, else the record's) differ from those of all the
// others in the group (undeclaredApart) — then
// secret_host_mismatch (with env.Secrets), model_unpriced and
// rules_refuse_all (with env.Rules). Off members
// count: switching a member on must not need a new warning to be safe.
func Warnings(r *Record, env Env) []*adminv1.Warning {
	res := compiled(r)
	eps, accounts := warningEndpoints(r, res)
	var out []*adminv1.Warning
	warn := func(code, msg string, members []string) {
		out = append(out, &adminv1.Warning{Code: code, Message: msg, Record: r.Name, Members: members})
	}
	for _, p := range res.problems {
		warn(WarnRecordRefused, fmt.Sprintf("the edges refuse the configuration while it holds this record, and keep routing on their last one: %s", p.Error()), nil)
	}
	warnShared(eps, accounts, warn)
	if env.Secrets != nil {
		warnSecretHosts(eps, env.Secrets, warn)
	}
	warnUnpriced(r.Spec.GetModels(), eps, warn)
	if env.Rules != nil && !r.Managed && len(eps) > 0 {
		warnRulesRefuseAll(eps, env.Rules, warn)
	}
	return out
}

// warnEndpoint is one endpoint a record's warnings look at: a member by
// name with everything it inherits resolved.
type warnEndpoint struct {
	name string
	eff  *adminv1.EffectiveMember
}

// warnFunc adds one warning of the record: its code, message and the
// members it concerns (nil for the record as a whole).
type warnFunc func(code, msg string, members []string)

// warningEndpoints returns r's endpoints, as res (r resolved) has them —
// every member of a pool in listing order (sortedMembers), else the plain
// record's "primary" — and, for a pool, each member's declared account
// (compile.DeclaredAccount; "" for none).
func warningEndpoints(r *Record, res resolution) ([]warnEndpoint, map[string]string) {
	var eps []warnEndpoint
	accounts := map[string]string{} // member → declared account
	if r.Pool {
		for _, m := range sortedMembers(r) {
			eps = append(eps, warnEndpoint{m.Name, res.effective(r, m)})
			_, cfg := res.member(m)
			accounts[m.Name] = compile.DeclaredAccount(res.config, cfg)
		}
	} else {
		eps = append(eps, warnEndpoint{rules.PrimaryMember, res.effective(r, nil)})
	}
	return eps, accounts
}

// groupEndpoints groups eps by keyOf, leaving out those whose key is "":
// keys in the order of their first endpoint, and each key's endpoint
// names in eps's order.
func groupEndpoints(eps []warnEndpoint, keyOf func(e warnEndpoint) string) (keys []string, by map[string][]string) {
	by = map[string][]string{}
	for _, e := range eps {
		k := keyOf(e)
		if k == "" {
			continue
		}
		if _, seen := by[k]; !seen {
			keys = append(keys, k)
		}
		by[k] = append(by[k], e.name)
	}
	return keys, by
}

// warnShared adds R-SEC-4's shared_key_secret, then shared_host warnings:
// groups of two or more members not declared apart (undeclaredApart), each
// reported once, in the order of their first member.
func warnShared(eps []warnEndpoint, accounts map[string]string, warn warnFunc) {
	keys, by := groupEndpoints(eps, func(e warnEndpoint) string { return signingSecret(e.eff.GetAuth(), e.eff.GetKeySecret()) })
	for _, k := range keys {
		if ms := undeclaredApart(by[k], accounts); len(ms) > 1 {
			warn(WarnSharedKeySecret, fmt.Sprintf("members %s sign with the same secret %s: they are probably keys of one account and add no capacity (R-SEC-4)", list(ms), strconv.Quote(k)), ms)
		}
	}
	keys, by = groupEndpoints(eps, func(e warnEndpoint) string { return hostOf(e.eff.GetBaseUrl()) })
	for _, k := range keys {
		if ms := undeclaredApart(by[k], accounts); len(ms) > 1 {
			warn(WarnSharedHost, fmt.Sprintf("members %s reach the same host %s: they are probably one deployment and add no capacity (R-SEC-4)", list(ms), strconv.Quote(k)), ms)
		}
	}
}

// GoogleTokenURL is where a Google service account's signed JWT is
// exchanged for an access token (sakey.GoogleTokenURL). A
// google-service-account secret must be bound to its host.
const GoogleTokenURL = sakey.GoogleTokenURL

// warnSecretHosts adds a secret_host_mismatch warning for every endpoint
// whose signing secret (one of secrets, which maps names to bound hosts)
// is not bound to the host it goes to — the base URL's, the token URL's
// for OAuth2, or Google's token host (GoogleTokenURL) for
// google-service-account auth — since the edge sends a secret only to a
// host it is bound to (R-SEC-1).
func warnSecretHosts(eps []warnEndpoint, secrets map[string][]string, warn warnFunc) {
	for _, e := range eps {
		secret := signingSecret(e.eff.GetAuth(), e.eff.GetKeySecret())
		target := e.eff.GetBaseUrl()
		switch e.eff.GetAuth().GetKind() {
		case configv1.AuthKind_AUTH_KIND_OAUTH2:
			target = e.eff.GetAuth().GetTokenUrl() // the client secret goes to the token endpoint
		case configv1.AuthKind_AUTH_KIND_GOOGLE_SERVICE_ACCOUNT:
			target = GoogleTokenURL // the key signs a JWT sent to the key's token_uri
		}
		hosts, ok := secrets[secret]
		if secret == "" || !ok || target == "" || hostBound(hosts, target) {
			continue
		}
		h, _ := hostPortOf(target)
		warn(WarnSecretHostMissing, fmt.Sprintf("secret %s is not bound to host %s, so the edge will not send it there (R-SEC-1): add the host to the secret", strconv.Quote(secret), strconv.Quote(h)), []string{e.name})
	}
}

// warnUnpriced adds a model_unpriced warning, in the record's order, for
// every model some endpoint serves that is not priced (R-MODEL-4): priced
// means every endpoint serving it has a whole price for it, its own or
// the record's.
func warnUnpriced(models []*configv1.Model, eps []warnEndpoint, warn warnFunc) {
	for _, md := range models {
		model := md.GetName()
		priced, serving := true, 0
		for _, e := range eps {
			if !slices.Contains(e.eff.GetModels(), model) {
				continue
			}
			serving++
			whole := false
			for _, p := range e.eff.GetPrices() {
				if p.GetPrice().GetModel() == model {
					whole = p.GetWhole()
				}
			}
			priced = priced && whole
		}
		if serving > 0 && !priced {
			warn(WarnModelUnpriced, fmt.Sprintf("model %s has no whole price on the record or on every member, so the record sorts after priced ones (R-MODEL-4)", strconv.Quote(model)), nil)
		}
	}
}

// warnRulesRefuseAll adds rules_refuse_all when the tenant's data rules
// refuse every one of eps, which makes the record unreachable (R-ELIG-2).
func warnRulesRefuseAll(eps []warnEndpoint, rules *configv1.DataRules, warn warnFunc) {
	refused := 0
	for _, e := range eps {
		if refusedByRules(rules, e.eff) {
			refused++
		}
	}
	if refused == len(eps) {
		warn(WarnRulesRefuseAll, "the tenant's data rules refuse every member of the record, so calls can never reach it (R-ELIG-2)", nil)
	}
}

// undeclaredApart returns the members of group that the operator has not
// declared apart from every other member of it: two members are declared
// apart when both declare an account and the accounts differ. The result
// keeps group's order and has no member or at least two.
func undeclaredApart(group []string, accounts map[string]string) []string {
	var out []string
	for i, a := range group {
		for j, b := range group {
			if i != j && (accounts[a] == "" || accounts[b] == "" || accounts[a] == accounts[b]) {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// refusedByRules reports whether the data rules refuse an endpoint
// (R-ELIG-2): its region matches none of the allowed regions (no region
// matches none), it retains data where that is refused, or it lacks a
// required tag.
func refusedByRules(rules *configv1.DataRules, e *adminv1.EffectiveMember) bool {
	if allowed := rules.GetAllowedRegions(); len(allowed) > 0 && !regionMatches(e.GetRegion(), allowed) {
		return true
	}
	if rules.GetNoRetainedData() && e.GetRetainsData() {
		return true
	}
	for k, v := range rules.GetRequiredTags() {
		if e.GetTags()[k] != v {
			return true
		}
	}
	return false
}

// regionMatches reports whether region matches any of the patterns, exact
// names or globs such as "eu-*" (path.Match), as the edge matches data
// rules and allowed regions (R-ELIG-2, R-ELIG-3): no region matches none.
func regionMatches(region string, patterns []string) bool {
	if region == "" {
		return false
	}
	for _, pat := range patterns {
		if m, err := path.Match(pat, region); err == nil && m {
			return true
		}
	}
	return false
}

// hostBound reports whether a secret bound to hosts (each a name or
// name:port) may be sent to the host of target: a bare name binds every
// port, name:port only that port.
func hostBound(hosts []string, target string) bool {
	h, port := hostPortOf(target)
	for _, b := range hosts {
		bh, bp := strings.ToLower(strings.TrimSuffix(b, ".")), ""
		if hh, pp, err := net.SplitHostPort(b); err == nil {
			bh, bp = strings.ToLower(strings.TrimSuffix(hh, ".")), pp
		}
		bh = strings.TrimSuffix(strings.TrimPrefix(bh, "["), "]")
		if bh == h && (bp == "" || bp == port) {
			return true
		}
	}
	return false
}

// list formats member names for a message: "a", "a and b", "a, b and c".
func list(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}
