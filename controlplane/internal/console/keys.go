package console

import (
	"net/http"
	"net/url"
	"strings"

	"connectrpc.com/connect"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/web"
)

// keysPage is the tenant's API keys page (/console/keys): the list, the
// create form and revocation.
type keysPage struct{ *base }

// show lists the tenant's API keys (revoked ones too), with the create
// form for tenant admins.
func (c keysPage) show(w http.ResponseWriter, r *http.Request, s *session) {
	if c.needTenant(w, r, s, "Keys", "keys") {
		return
	}
	c.renderKeys(w, r, s, http.StatusOK, web.KeysView{})
}

// createKey creates a key and answers with the page itself, the new key's
// plaintext in it: it is never put in a cookie, a flash or a URL, so that a
// reload or the next page cannot show it again (every response is
// Cache-Control: no-store).
func (c keysPage) createKey(w http.ResponseWriter, r *http.Request, s *session) {
	if c.needTenant(w, r, s, "Keys", "keys") {
		return
	}
	f := web.KeyForm{
		Name:           strings.TrimSpace(r.PostFormValue("name")),
		AllowedModels:  strings.TrimSpace(r.PostFormValue("allowed_models")),
		AllowedRecords: strings.TrimSpace(r.PostFormValue("allowed_records")),
		Regions:        strings.TrimSpace(r.PostFormValue("regions")),
		RPM:            strings.TrimSpace(r.PostFormValue("limits.rpm")),
		MaxInFlight:    strings.TrimSpace(r.PostFormValue("limits.max_in_flight")),
	}
	models, records, regions := splitItems(f.AllowedModels), splitItems(f.AllowedRecords), splitItems(f.Regions)
	var lp web.Problems
	limits := (&limitsForm{rpm: f.RPM, maxInFlight: f.MaxInFlight}).limits(&lp)
	if lp.Any() {
		c.renderKeys(w, r, s, http.StatusUnprocessableEntity, web.KeysView{Form: f, Problems: lp})
		return
	}
	resp, err := s.api.Keys.CreateApiKey(r.Context(), connect.NewRequest(&adminv1.CreateApiKeyRequest{
		Tenant: s.tenant, Name: f.Name, AllowedModels: models, AllowedRecords: records, Regions: regions, Limits: limits,
	}))
	if err != nil {
		p, status, done := c.formError(w, r, s, err)
		if done {
			return
		}
		p = foldList(foldList(foldList(p, "allowed_models", models), "allowed_records", records), "regions", regions)
		f.ModelsProblem, f.RecordsProblem, f.RegionsProblem = p.For("allowed_models"), p.For("allowed_records"), p.For("regions")
		c.renderKeys(w, r, s, status, web.KeysView{Form: f, Problems: p})
		return
	}
	s.flash(web.FlashOK, "Key "+resp.Msg.GetApiKey().GetName()+" created.")
	c.renderKeys(w, r, s, http.StatusOK, web.KeysView{
		New: &web.NewKey{Name: resp.Msg.GetApiKey().GetName(), Value: resp.Msg.GetKey()},
	})
}

// revokeKey revokes the named key and goes back to the list.
func (c keysPage) revokeKey(w http.ResponseWriter, r *http.Request, s *session) {
	name := r.PathValue("name")
	back := acctURL("/console/keys", s.tenant, nil)
	_, err := s.api.Keys.RevokeApiKey(r.Context(), connect.NewRequest(&adminv1.RevokeApiKeyRequest{Tenant: s.tenant, Name: name}))
	if err != nil {
		p, _, done := c.formError(w, r, s, err)
		if done {
			return
		}
		c.redirect(w, r, back, web.Flash{Kind: web.FlashError, Text: "Key " + name + " was not revoked. " + p.Message})
		return
	}
	c.redirect(w, r, back, web.Flash{Kind: web.FlashOK, Text: "Key " + name + " revoked."})
}

func (c keysPage) renderKeys(w http.ResponseWriter, r *http.Request, s *session, status int, v web.KeysView) {
	keys, err := listKeys(r, s, true)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v.Tenant, v.CSRF = s.tenant, s.csrf
	v.CanManage = s.can(adminv1.Role_ROLE_TENANT_ADMIN)
	v.Action = acctURL("/console/keys", s.tenant, nil)
	for _, k := range keys {
		row := web.KeyRow{
			Name: k.GetName(), Prefix: k.GetKeyPrefix(), CreatedBy: k.GetCreatedBy(),
			Restrictions: keyRestrictions(k), Limits: keyLimits(k),
		}
		if k.GetCreatedAt() != nil {
			row.Created = k.GetCreatedAt().AsTime()
		}
		if k.GetLastUsedAt() != nil {
			row.LastUsed = k.GetLastUsedAt().AsTime()
		}
		if k.GetRevokedAt() != nil {
			row.Revoked = k.GetRevokedAt().AsTime()
		} else {
			row.RevokeURL = acctURL("/console/keys/"+url.PathEscape(k.GetName())+"/revoke", s.tenant, nil)
		}
		v.Keys = append(v.Keys, row)
	}
	c.page(w, r, s, status, "Keys", "keys", web.KeysPage(v))
}

// listKeys lists every key of the session's tenant.
func listKeys(r *http.Request, s *session, revoked bool) ([]*adminv1.ApiKey, error) {
	var out []*adminv1.ApiKey
	tok := ""
	for {
		resp, err := s.api.Keys.ListApiKeys(r.Context(), connect.NewRequest(&adminv1.ListApiKeysRequest{
			Tenant: s.tenant, IncludeRevoked: revoked, PageSize: 1000, PageToken: tok,
		}))
		if err != nil {
			return nil, err
		}
		out = append(out, resp.Msg.GetApiKeys()...)
		if tok = resp.Msg.GetNextPageToken(); tok == "" {
			return out, nil
		}
	}
}

// keyRestrictions describes what a key is limited to.
func keyRestrictions(k *adminv1.ApiKey) string {
	var parts []string
	if m := k.GetAllowedModels(); len(m) > 0 {
		parts = append(parts, "models "+strings.Join(m, ", "))
	}
	if rs := k.GetAllowedRecords(); len(rs) > 0 {
		parts = append(parts, "records "+strings.Join(rs, ", "))
	}
	if rg := k.GetRegions(); len(rg) > 0 {
		parts = append(parts, "regions "+strings.Join(rg, ", "))
	}
	return strings.Join(parts, "; ")
}
