package admin

import (
	"context"
	"encoding/json"
	"net/url"

	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/controlplane/internal/admin/apierr"
	"weir.dev/db/sqlc"
	"weir.dev/routing/rules"
)

// This file resolves provider records into endpoints for the checks this
// package makes (data-rule warnings, secret users and host binding, doctor).
// The provider package owns the full resolution (presets, prices, warnings
// of record changes); this is the small part those checks need: what a
// member inherits from its record (ROUTING.md "Words").

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
	// Secrets the endpoint uses, by field ("key_secret",
	// "auth.access_key_secret", "auth.client_secret_secret"), and whether
	// the endpoint names it itself (false: inherited from the record).
	secrets map[string]secretRef
}

type secretRef struct {
	name string
	own  bool
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
// record the record itself as member rules.PrimaryMember.
func (r record) endpoints() []endpoint {
	rec := r.rec
	recTags := jsonMap(rec.Tags)
	recSecrets := map[string]secretRef{}
	add := func(m map[string]secretRef, field string, t pgtype.Text, own bool) {
		if t.Valid && t.String != "" {
			m[field] = secretRef{name: t.String, own: own}
		}
	}
	add(recSecrets, "key_secret", rec.KeySecret, true)
	add(recSecrets, "auth.access_key_secret", rec.AccessKeySecret, true)
	add(recSecrets, "auth.client_secret_secret", rec.ClientSecretSecret, true)
	if !rec.Pool {
		return []endpoint{{
			record: rec.Name, member: rules.PrimaryMember, baseURL: rec.BaseURL.String, tokenURL: rec.TokenURL,
			region: rec.Region, retainsData: rec.RetainsData, tags: recTags, secrets: recSecrets,
		}}
	}
	out := make([]endpoint, 0, len(r.members))
	for _, m := range r.members {
		e := endpoint{
			record: rec.Name, member: m.Name, off: m.Off, baseURL: m.BaseURL,
			region: rec.Region, retainsData: rec.RetainsData, tags: map[string]string{},
			secrets: map[string]secretRef{},
		}
		if m.Region.Valid {
			e.region = m.Region.String
		}
		if m.RetainsData.Valid {
			e.retainsData = m.RetainsData.Bool
		}
		for k, v := range recTags {
			e.tags[k] = v
		}
		for k, v := range jsonMap(m.Tags) {
			e.tags[k] = v
		}
		if m.KeySecret.Valid {
			add(e.secrets, "key_secret", m.KeySecret, true)
		} else if s, ok := recSecrets["key_secret"]; ok {
			e.secrets["key_secret"] = secretRef{name: s.name}
		}
		// Auth is inherited as a whole when the member names no auth kind
		// and no header.
		if !m.AuthKind.Valid && !m.AuthHeader.Valid {
			e.tokenURL = rec.TokenURL
			for _, f := range []string{"auth.access_key_secret", "auth.client_secret_secret"} {
				if s, ok := recSecrets[f]; ok {
					e.secrets[f] = secretRef{name: s.name}
				}
			}
		} else {
			e.tokenURL = m.TokenURL
			add(e.secrets, "auth.access_key_secret", m.AccessKeySecret, true)
			add(e.secrets, "auth.client_secret_secret", m.ClientSecretSecret, true)
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

func jsonMap(raw []byte) map[string]string {
	m := map[string]string{}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &m)
	}
	return m
}
