package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/controlplane/internal/admin/apierr"
	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/sakey"
	"weir.dev/controlplane/internal/secretbox"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/routing"
)

// Limits of secrets (secrets.proto).
const (
	maxSecretValue = 64 << 10
	maxSecretHosts = 32
)

// secretQueries are the reads SecretService makes.
type secretQueries interface {
	tenantGetter
	recordQueries
	ListSecrets(ctx context.Context, tenantID pgtype.UUID) ([]sqlc.Secret, error)
	ListAuditLastActors(ctx context.Context, arg sqlc.ListAuditLastActorsParams) ([]sqlc.ListAuditLastActorsRow, error)
}

// SecretService implements weir.admin.v1.SecretService. Values are sealed
// with the master key before they reach the store and are never returned,
// logged or audited; no error message quotes a value.
type SecretService struct {
	base
	q   secretQueries
	box *secretbox.Box
}

// secretWriters may set and delete secrets.
func secretWriters() []auth.Role { return []auth.Role{auth.RoleTenantAdmin, auth.RoleProviderAdmin} }

// SetSecret creates or replaces a secret: value and hosts together.
func (s *SecretService) SetSecret(ctx context.Context, req *connect.Request[adminv1.SetSecretRequest]) (*connect.Response[adminv1.SetSecretResponse], error) {
	m := req.Msg
	p, t, err := scope(ctx, s.q, m.GetTenant(), secretWriters()...)
	if err != nil {
		return nil, err
	}
	var ps apierr.Problems
	apierr.Name(&ps, "name", m.GetName())
	switch v := m.GetValue(); {
	case v == "":
		ps.Add("value", apierr.CodeRequired, "a value is required")
	case len(v) > maxSecretValue:
		ps.Addf("value", apierr.CodeTooLong, "the value is %d bytes; at most %d", len(v), maxSecretValue)
	case !utf8.ValidString(v):
		ps.Add("value", apierr.CodeInvalidValue, "the value must be UTF-8")
	}
	hosts := normalizeHosts(&ps, m.GetHosts())
	if ps.Len() > 0 {
		return nil, ps.Err()
	}
	var sec sqlc.Secret
	var created bool
	var users []*adminv1.SecretUse
	var warnings []*adminv1.Warning
	err = s.tx.Tx(ctx, p.Actor(), func(tx *store.Tx) error {
		recs, err := loadRecords(ctx, tx.Q, t.ID)
		if err != nil {
			return err
		}
		users = secretUsers(recs, m.GetName())
		// The value must fit how records already use the secret.
		var ps apierr.Problems
		for _, u := range users {
			if u.GetField() == "auth.access_key_secret" && !awsCredentialsShape(m.GetValue()) {
				ps.Add("value", apierr.CodeInvalidValue, fmt.Sprintf("%s uses this secret as a SigV4 access key: the value must be ACCESS_KEY_ID:SECRET_ACCESS_KEY or JSON {\"access_key_id\",\"secret_access_key\",\"session_token\"}", useName(u)))
				break
			}
		}
		tokenURL := ""
		var eps []endpoint // every record's endpoints, compiled once
		for _, r := range recs {
			eps = append(eps, r.endpoints()...)
		}
		if e, ok := serviceAccountUser(eps, m.GetName()); ok {
			var problems []string
			tokenURL, problems = sakey.Check(m.GetValue())
			for _, pr := range problems {
				ps.Add("value", apierr.CodeInvalidValue, fmt.Sprintf("member %q of record %q signs with this secret as a Google service account key (google-service-account auth): %s", e.member, e.record, pr))
			}
		}
		if err := ps.Err(); err != nil {
			return err
		}
		_, err = tx.Q.GetSecret(ctx, sqlc.GetSecretParams{TenantID: t.ID, Name: m.GetName()})
		switch {
		case store.IsNotFound(err):
			created = true
		case err != nil:
			return err
		}
		// Bound to this row: tenant, name and the new hosts (DESIGN §5).
		ct, nonce, err := s.box.Seal([]byte(m.GetValue()), secretbox.AdditionalData(t.ID, m.GetName(), hosts))
		if err != nil {
			return err
		}
		if sec, err = tx.Q.SetSecret(ctx, sqlc.SetSecretParams{
			TenantID: t.ID, Name: m.GetName(), Ciphertext: ct, Nonce: nonce,
			KeyVersion: secretbox.KeyVersion, SealVersion: secretbox.SealVersion, Hosts: hosts,
		}); err != nil {
			return err
		}
		warnings = hostMismatches(eps, m.GetName(), hosts, tokenURL)
		if err := tx.Changed(ctx, t.ID); err != nil {
			return err
		}
		return tx.Audit(ctx, "set", "secrets", sec.Name, map[string]any{
			"id": store.UUIDString(sec.ID), "hosts": hosts, "created": created,
		})
	})
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	out := secretProto(sec, m.GetTenant(), users)
	out.UpdatedBy = p.Name
	return connect.NewResponse(&adminv1.SetSecretResponse{Secret: out, Created: created, Warnings: warnings}), nil
}

// ListSecrets lists secrets' metadata, never values.
func (s *SecretService) ListSecrets(ctx context.Context, req *connect.Request[adminv1.ListSecretsRequest]) (*connect.Response[adminv1.ListSecretsResponse], error) {
	m := req.Msg
	_, t, err := scope(ctx, s.q, m.GetTenant(), auth.TenantRoles()...)
	if err != nil {
		return nil, err
	}
	var ps apierr.Problems
	size := pageSize(&ps, m.GetPageSize())
	off := offsetToken(&ps, m.GetPageToken())
	if err := ps.Err(); err != nil {
		return nil, err
	}
	list, err := s.q.ListSecrets(ctx, t.ID)
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	items, next := page(list, off, size)
	resp := &adminv1.ListSecretsResponse{NextPageToken: next}
	if len(items) == 0 {
		return connect.NewResponse(resp), nil
	}
	recs, err := loadRecords(ctx, s.q, t.ID)
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	actors, err := s.q.ListAuditLastActors(ctx, sqlc.ListAuditLastActorsParams{TenantID: t.ID, ObjectKind: "secrets", Action: "set"})
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	for _, sec := range items {
		out := secretProto(sec, m.GetTenant(), secretUsers(recs, sec.Name))
		for _, a := range actors {
			if a.ObjectName == sec.Name {
				out.UpdatedBy = a.Actor
			}
		}
		resp.Secrets = append(resp.Secrets, out)
	}
	return connect.NewResponse(resp), nil
}

// DeleteSecret deletes a secret no record or member names.
func (s *SecretService) DeleteSecret(ctx context.Context, req *connect.Request[adminv1.DeleteSecretRequest]) (*connect.Response[adminv1.DeleteSecretResponse], error) {
	m := req.Msg
	p, t, err := scope(ctx, s.q, m.GetTenant(), secretWriters()...)
	if err != nil {
		return nil, err
	}
	var ps apierr.Problems
	apierr.Name(&ps, "name", m.GetName())
	if err := ps.Err(); err != nil {
		return nil, err
	}
	err = s.tx.Tx(ctx, p.Actor(), func(tx *store.Tx) error {
		recs, err := loadRecords(ctx, tx.Q, t.ID)
		if err != nil {
			return err
		}
		if users := secretUsers(recs, m.GetName()); len(users) > 0 {
			names := make([]string, len(users))
			for i, u := range users {
				names[i] = useName(u) + " (" + u.GetField() + ")"
			}
			return store.Preconditionf(fmt.Sprintf("secret %q is still used by %s", m.GetName(), strings.Join(names, ", ")))
		}
		n, err := tx.Q.DeleteSecret(ctx, sqlc.DeleteSecretParams{TenantID: t.ID, Name: m.GetName()})
		if err != nil {
			return err
		}
		if n == 0 {
			return apierr.NotFound("secret", m.GetName())
		}
		if err := tx.Changed(ctx, t.ID); err != nil {
			return err
		}
		return tx.Audit(ctx, "delete", "secrets", m.GetName(), nil)
	})
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	return connect.NewResponse(&adminv1.DeleteSecretResponse{}), nil
}

// normalizeHosts checks 1-32 hosts and returns their normal forms, each once.
func normalizeHosts(ps *apierr.Problems, hosts []string) []string {
	switch n := len(hosts); {
	case n == 0:
		ps.Add("hosts", apierr.CodeRequired, "at least one host is required: the secret is sent only to its hosts")
	case n > maxSecretHosts:
		ps.Addf("hosts", apierr.CodeTooMany, "%d hosts; at most %d", n, maxSecretHosts)
	}
	var out []string
	for i, h := range hosts {
		f := fmt.Sprintf("hosts[%d]", i)
		n, ok := apierr.Host(ps, f, h)
		if !ok {
			continue
		}
		dup := false
		for _, o := range out {
			if o == n {
				dup = true
			}
		}
		if dup {
			ps.Add(f, apierr.CodeDuplicate, "host listed twice")
			continue
		}
		out = append(out, n)
	}
	return out
}

// secretUsers lists the records and members that name the secret
// themselves.
func secretUsers(recs []record, name string) []*adminv1.SecretUse {
	var out []*adminv1.SecretUse
	for _, r := range recs {
		for _, f := range []struct {
			field string
			v     pgtype.Text
		}{{"key_secret", r.rec.KeySecret}, {"auth.access_key_secret", r.rec.AccessKeySecret}, {"auth.client_secret_secret", r.rec.ClientSecretSecret}} {
			if f.v.Valid && f.v.String == name {
				out = append(out, &adminv1.SecretUse{Record: r.rec.Name, Field: f.field})
			}
		}
		for _, m := range r.members {
			for _, f := range []struct {
				field string
				v     pgtype.Text
			}{{"key_secret", m.KeySecret}, {"auth.access_key_secret", m.AccessKeySecret}, {"auth.client_secret_secret", m.ClientSecretSecret}} {
				if f.v.Valid && f.v.String == name {
					out = append(out, &adminv1.SecretUse{Record: r.rec.Name, Member: m.Name, Field: f.field})
				}
			}
		}
	}
	return out
}

// serviceAccountUser is the first of eps that signs with secret name as a
// service account's key (google-service-account auth).
func serviceAccountUser(eps []endpoint, name string) (endpoint, bool) {
	for _, e := range eps {
		if e.auth == routing.AuthGoogleServiceAccount && e.secrets["key_secret"].name == name {
			return e, true
		}
	}
	return endpoint{}, false
}

// hostMismatches warns about each endpoint using the secret whose host the
// secret's hosts leave out (R-SEC-1). A service account's key goes to two
// hosts: the member's (with the token it buys) and its token endpoint's,
// tokenURL ("" when the value names none that parses).
func hostMismatches(eps []endpoint, name string, hosts []string, tokenURL string) []*adminv1.Warning {
	byRecord := map[string][]string{}
	var order []string
	tokenHost, tokenPort, tokenOK := urlHostPort(tokenURL)
	for _, e := range eps {
		for field, ref := range e.secrets {
			if ref.name != name {
				continue
			}
			h, port, ok := e.sendHost(field)
			bound := !ok || boundTo(hosts, h, port)
			if field == "key_secret" && e.auth == routing.AuthGoogleServiceAccount && tokenOK {
				bound = bound && boundTo(hosts, tokenHost, tokenPort)
			}
			if bound {
				continue
			}
			if _, seen := byRecord[e.record]; !seen {
				order = append(order, e.record)
			}
			byRecord[e.record] = append(byRecord[e.record], e.member)
		}
	}
	var out []*adminv1.Warning
	for _, rec := range order {
		ms := byRecord[rec]
		sort.Strings(ms)
		out = append(out, &adminv1.Warning{
			Code:    "secret_host_mismatch",
			Message: fmt.Sprintf("secret %q is not bound to the host of %s of record %q, so edges will not send it there", name, strings.Join(ms, ", "), rec),
			Record:  rec, Members: ms,
		})
	}
	return out
}

// awsCredentialsShape reports whether v looks like a SigV4 access key
// secret: "ID:SECRET" or a JSON object with both fields (the edge's
// secrets.ParseAWSCredentials decides for good).
func awsCredentialsShape(v string) bool {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "{") {
		var j struct {
			AccessKeyID     string `json:"access_key_id"`
			SecretAccessKey string `json:"secret_access_key"`
			SessionToken    string `json:"session_token"`
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(v)))
		dec.DisallowUnknownFields()
		return dec.Decode(&j) == nil && !dec.More() && j.AccessKeyID != "" && j.SecretAccessKey != ""
	}
	id, secret, ok := strings.Cut(v, ":")
	return ok && id != "" && secret != "" && !strings.Contains(secret, ":")
}

func useName(u *adminv1.SecretUse) string {
	if u.GetMember() == "" {
		return fmt.Sprintf("record %q", u.GetRecord())
	}
	return fmt.Sprintf("member %q of record %q", u.GetMember(), u.GetRecord())
}

// secretProto is a secret's metadata: never the ciphertext or the value.
func secretProto(s sqlc.Secret, tenant string, users []*adminv1.SecretUse) *adminv1.Secret {
	return &adminv1.Secret{
		Name: s.Name, Tenant: tenant, Hosts: s.Hosts, UsedBy: users,
		CreatedAt: ts(s.CreatedAt), UpdatedAt: ts(s.UpdatedAt),
	}
}
