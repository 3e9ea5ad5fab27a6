package admin

import (
	"context"
	"net/url"

	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/controlplane/internal/admin/apierr"
	"weir.dev/controlplane/internal/recordrow"
	"weir.dev/db/sqlc"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing"
	"weir.dev/routing/compile"
)

// This file resolves provider records into endpoints for the checks this
// package makes (data-rule warnings, secret users and host binding, doctor).
// What a member inherits from its record (ROUTING.md "Member") is the edges'
// compiler's to decide: endpoints reads it off the compiled members
// (routing/compile), as the provider package does for `provider show`.

// record is a provider record with its members.
type record struct {
	rec     sqlc.ProviderRecord
	members []sqlc.PoolMember
}

// endpoint is one member as calls reach it, inherited fields resolved.
type endpoint struct {
	record, member string
	off            bool
	baseURL        string
	tokenURL       string
	region         string
	retainsData    bool
	tags           map[string]string
	// account is the account the member declares (its own, else the
	// record's; "" for none), not the compiler's fallback.
	account string
	// Secrets the endpoint uses, by field ("key_secret",
	// "auth.access_key_secret", "auth.client_secret_secret").
	secrets map[string]secretRef
	// auth is how the endpoint signs: with google-service-account auth
	// its key secret holds a service account's JSON key.
	auth routing.AuthKind
}

type secretRef struct {
	name string
}

// loadRecords reads every record of the owner with its members.
func loadRecords(ctx context.Context, q recordQueries, owner pgtype.UUID) ([]record, error) {
	recs, err := q.ListProviderRecords(ctx, owner)
	if err != nil {
		return nil, err
	}
	members, err := q.ListOwnerPoolMembers(ctx, owner)
	if err != nil {
		return nil, err
	}
	byID := map[pgtype.UUID]int{}
	out := make([]record, len(recs))
	for i, r := range recs {
		out[i].rec = r
		byID[r.ID] = i
	}
	for _, m := range members {
		if i, ok := byID[m.RecordID]; ok {
			out[i].members = append(out[i].members, m)
		}
	}
	return out, nil
}

// endpoints resolves the record's endpoints: its members, or for a plain
// record the record itself as member rules.PrimaryMember; none for a pool
// without members. The rows are decoded by recordrow and compiled by
// compile.Resolve, which resolves a record that breaks rules as far as it
// goes: the checks here report on what the record names even then (the
// compiler's problems are the provider service's to report).
func (r record) endpoints() []endpoint {
	if r.rec.Pool && len(r.members) == 0 {
		return nil
	}
	cr, _ := recordrow.Record(r.rec)
	for _, m := range r.members {
		cm, _ := recordrow.Member(r.rec.Name, m)
		cr.Members = append(cr.Members, cm)
	}
	compiled, _ := compile.Resolve(cr, cr.GetManaged())
	out := make([]endpoint, 0, len(compiled.Members))
	for i, m := range compiled.Members {
		var cm *configv1.Member // nil for a plain record's own member
		if compiled.Pool {
			cm = cr.GetMembers()[i]
		}
		e := endpoint{
			record: r.rec.Name, member: m.Name, off: m.Off, baseURL: m.BaseURL, tokenURL: m.Auth.TokenURL,
			region: m.Region, retainsData: m.RetainsData, tags: m.Tags,
			account: compile.DeclaredAccount(cr, cm), secrets: map[string]secretRef{}, auth: m.Auth.Kind,
		}
		for field, name := range map[string]string{
			"key_secret":                m.KeySecret,
			"auth.access_key_secret":    m.Auth.AccessKeySecret,
			"auth.client_secret_secret": m.Auth.ClientSecret,
		} {
			if name != "" {
				e.secrets[field] = secretRef{name: name}
			}
		}
		out = append(out, e)
	}
	return out
}

// sendHost is the host (with its port, default by scheme) a secret used in
// field is sent to: the token URL's for an OAuth2 client secret, else the
// base URL's. ok is false when the URL does not parse.
func (e endpoint) sendHost(field string) (host, port string, ok bool) {
	raw := e.baseURL
	if field == "auth.client_secret_secret" {
		raw = e.tokenURL
	}
	return urlHostPort(raw)
}

// urlHostPort is raw's host and port, the port by scheme when raw names
// none. ok is false when raw does not parse or has no host.
func urlHostPort(raw string) (host, port string, ok bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", "", false
	}
	h, p, err := apierr.HostPort(u.Host)
	if err != nil {
		return "", "", false
	}
	if p == "" {
		switch u.Scheme {
		case "https":
			p = "443"
		case "http":
			p = "80"
		}
	}
	return h, p, true
}

// boundTo reports whether a secret bound to hosts (normal forms) may be sent
// to host:port: a binding without a port matches every port (R-SEC-1, as
// the edge's secrets.Store does).
func boundTo(hosts []string, host, port string) bool {
	for _, b := range hosts {
		bh, bp, err := apierr.HostPort(b)
		if err != nil {
			continue
		}
		if bh == host && (bp == "" || bp == port) {
			return true
		}
	}
	return false
}
