package console

import (
	"net/http"
	"strconv"
	"strings"

	"connectrpc.com/connect"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/web"
)

// setTenantLimits sets the current tenant's caller limits (R-CAP-2) from
// the form on the tenants page. The API authorizes (tenant admins, and
// only cluster admins above the cluster default) and checks the ranges;
// a refusal shows the tenants page again with the problems in the form.
func (c tenantsPage) setTenantLimits(w http.ResponseWriter, r *http.Request, s *session) {
	if c.needTenant(w, r, s, "Tenants", "tenants") {
		return
	}
	form := &limitsForm{
		rpm:         strings.TrimSpace(r.PostFormValue("limits.rpm")),
		maxInFlight: strings.TrimSpace(r.PostFormValue("limits.max_in_flight")),
	}
	var p web.Problems
	limits := form.limits(&p)
	if p.Any() {
		c.renderTenantsWith(w, r, s, http.StatusUnprocessableEntity, "", web.Problems{}, form, p)
		return
	}
	_, err := s.api.Tenants.SetTenantLimits(r.Context(), connect.NewRequest(&adminv1.SetTenantLimitsRequest{Tenant: s.tenant, Limits: limits}))
	if err != nil {
		p, status, done := c.formError(w, r, s, err)
		if done {
			return
		}
		c.renderTenantsWith(w, r, s, status, "", web.Problems{}, form, p)
		return
	}
	c.redirect(w, r, acctURL("/console/tenants", s.tenant, nil), web.Flash{Kind: web.FlashOK, Text: "Limits of " + s.tenant + " saved."})
}

// limitsForm is a submitted limits form, kept to show it again when
// refused.
type limitsForm struct {
	rpm, maxInFlight string
}

// limits reads the form: an empty value is 0 (no limit); a value that is
// not a whole number is a problem of its field.
func (f *limitsForm) limits(p *web.Problems) *configv1.CallerLimits {
	return &configv1.CallerLimits{
		Rpm:         limitValue(p, "limits.rpm", f.rpm),
		MaxInFlight: limitValue(p, "limits.max_in_flight", f.maxInFlight),
	}
}

// limitValue reads one caller limit of a form.
func limitValue(p *web.Problems, field, v string) int64 {
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		addProblem(p, field, "want a whole number (0 or empty: no limit)")
		return 0
	}
	return n
}

// keyLimits describes a key's caller limits ("" for none).
func keyLimits(k *adminv1.ApiKey) string {
	var parts []string
	if n := k.GetLimits().GetRpm(); n > 0 {
		parts = append(parts, strconv.FormatInt(n, 10)+" calls per minute")
	}
	if n := k.GetLimits().GetMaxInFlight(); n > 0 {
		parts = append(parts, strconv.FormatInt(n, 10)+" in flight")
	}
	return strings.Join(parts, "; ")
}
