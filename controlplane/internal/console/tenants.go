package console

import (
	"net/http"
	"strconv"
	"strings"

	"connectrpc.com/connect"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/web"
)

// tenantsPage is the tenants page (/console/tenants): the list, the create
// form and the current tenant's caller limits (limits.go).
type tenantsPage struct{ *base }

// show lists the tenants the admin can see (ListTenants filters by
// role), with the create form for cluster admins.
func (c tenantsPage) show(w http.ResponseWriter, r *http.Request, s *session) {
	c.renderTenants(w, r, s, http.StatusOK, "", web.Problems{})
}

// createTenant creates a tenant (the API refuses everyone but cluster
// admins, and checks the name). A refused name re-renders the page with
// the problems inline and the value kept; success redirects with a flash.
func (c tenantsPage) createTenant(w http.ResponseWriter, r *http.Request, s *session) {
	name := strings.TrimSpace(r.PostFormValue("name"))
	_, err := s.api.Tenants.CreateTenant(r.Context(), connect.NewRequest(&adminv1.CreateTenantRequest{Name: name}))
	if err != nil {
		if connect.CodeOf(err) == connect.CodeUnauthenticated {
			c.fail(w, r, s, err)
			return
		}
		p, status := problemsOf(err)
		c.renderTenants(w, r, s, status, name, p)
		return
	}
	c.redirect(w, r, "/console/tenants", web.Flash{Kind: web.FlashOK, Text: "Tenant " + name + " created."})
}

func (c tenantsPage) renderTenants(w http.ResponseWriter, r *http.Request, s *session, status int, name string, p web.Problems) {
	c.renderTenantsWith(w, r, s, status, name, p, nil, web.Problems{})
}

// renderTenantsWith renders the tenants page; form and lp are the limits
// form after a refused submission (nil: the stored limits).
func (c tenantsPage) renderTenantsWith(w http.ResponseWriter, r *http.Request, s *session, status int, name string, p web.Problems,
	form *limitsForm, lp web.Problems,
) {
	resp, err := s.api.Tenants.ListTenants(r.Context(), connect.NewRequest(&adminv1.ListTenantsRequest{PageSize: 1000}))
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v := web.TenantsView{CanCreate: s.cluster, Name: name, Problems: p, CSRF: s.csrf}
	for _, t := range resp.Msg.GetTenants() {
		v.Tenants = append(v.Tenants, web.TenantRow{
			Name: t.GetName(), Disabled: t.GetDisabled(), Created: t.GetCreatedAt().AsTime(), Current: t.GetName() == s.tenant,
			RPM: t.GetLimits().GetRpm(), MaxInFlight: t.GetLimits().GetMaxInFlight(), Effective: t.GetEffectiveMaxInFlight(),
		})
	}
	if s.tenant != "" {
		g, err := s.api.Tenants.GetTenant(r.Context(), connect.NewRequest(&adminv1.GetTenantRequest{Tenant: s.tenant}))
		if err != nil {
			c.fail(w, r, s, err)
			return
		}
		t := g.Msg.GetTenant()
		l := &web.TenantLimitsView{
			Tenant: t.GetName(), RPM: t.GetLimits().GetRpm(), MaxInFlight: t.GetLimits().GetMaxInFlight(), Effective: t.GetEffectiveMaxInFlight(),
			CanManage: s.can(adminv1.Role_ROLE_TENANT_ADMIN), Action: acctURL("/console/tenants/limits", s.tenant, nil),
			FormRPM: limitField(t.GetLimits().GetRpm()), FormMaxInFlight: limitField(t.GetLimits().GetMaxInFlight()),
			Problems: lp,
		}
		if form != nil {
			l.FormRPM, l.FormMaxInFlight = form.rpm, form.maxInFlight
		}
		v.Limits = l
	}
	c.page(w, r, s, status, "Tenants", "tenants", web.TenantsPage(v))
}

// limitField is a stored caller limit as its form field shows it: empty
// for none.
func limitField(n int64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}
