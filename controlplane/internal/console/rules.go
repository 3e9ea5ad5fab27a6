package console

import (
	"fmt"
	"net/http"
	"sort"
	"strings"

	"connectrpc.com/connect"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/web"
)

// rulesPage is the tenant's data rules page (/console/rules).
type rulesPage struct{ *base }

// Data rules are a part of the tenant: the page has no navigation item of
// its own and highlights Tenants.
const rulesNav = "tenants"

// show is the tenant's data rules, with the edit form for tenant
// admins.
func (c rulesPage) show(w http.ResponseWriter, r *http.Request, s *session) {
	if c.needTenant(w, r, s, "Data rules", rulesNav) {
		return
	}
	c.renderRules(w, r, s, http.StatusOK, nil, web.Problems{})
}

// setRules replaces the tenant's data rules.
func (c rulesPage) setRules(w http.ResponseWriter, r *http.Request, s *session) {
	if c.needTenant(w, r, s, "Data rules", rulesNav) {
		return
	}
	form := &rulesForm{
		regions:  strings.TrimSpace(r.PostFormValue("rules.allowed_regions")),
		tags:     strings.TrimSpace(r.PostFormValue("rules.required_tags")),
		noRetain: r.PostFormValue("rules.no_retained_data") != "",
	}
	rules := &configv1.DataRules{AllowedRegions: splitItems(form.regions), NoRetainedData: form.noRetain}
	var p web.Problems
	rules.RequiredTags = parseTags(form.tags, &p)
	if p.Any() {
		c.renderRules(w, r, s, http.StatusUnprocessableEntity, form, p)
		return
	}
	resp, err := s.api.Tenants.SetDataRules(r.Context(), connect.NewRequest(&adminv1.SetDataRulesRequest{Tenant: s.tenant, Rules: rules}))
	if err != nil {
		p, status, done := c.formError(w, r, s, err)
		if done {
			return
		}
		c.renderRules(w, r, s, status, form, p)
		return
	}
	flashes := []web.Flash{{Kind: web.FlashOK, Text: "Data rules of " + s.tenant + " saved."}}
	for _, wn := range resp.Msg.GetWarnings() {
		flashes = append(flashes, web.Flash{Kind: web.FlashWarn, Text: wn.GetMessage()})
	}
	c.redirect(w, r, acctURL("/console/rules", s.tenant, nil), flashes...)
}

// rulesForm is a submitted form, kept to show it again when refused.
type rulesForm struct {
	regions, tags string
	noRetain      bool
}

// parseTags reads "key=value" lines; malformed lines and keys given twice
// are problems of rules.required_tags.
func parseTags(text string, p *web.Problems) map[string]string {
	tags := map[string]string{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		_, dup := tags[k]
		switch {
		case !ok:
			addProblem(p, "rules.required_tags", fmt.Sprintf("line %d: want key=value", i+1))
		case k == "":
			addProblem(p, "rules.required_tags", fmt.Sprintf("line %d: the key is empty", i+1))
		case dup:
			addProblem(p, "rules.required_tags", fmt.Sprintf("line %d: tag %s given twice", i+1, k))
		default:
			tags[k] = v
		}
	}
	if len(tags) == 0 {
		return nil
	}
	return tags
}

func (c rulesPage) renderRules(w http.ResponseWriter, r *http.Request, s *session, status int, form *rulesForm, p web.Problems) {
	resp, err := s.api.Tenants.GetDataRules(r.Context(), connect.NewRequest(&adminv1.GetDataRulesRequest{Tenant: s.tenant}))
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	cur := resp.Msg.GetRules()
	v := web.RulesView{
		Tenant: s.tenant, CSRF: s.csrf, Problems: p,
		Regions: cur.GetAllowedRegions(), NoRetainedData: cur.GetNoRetainedData(), Tags: sortedTags(cur.GetRequiredTags()),
		CanManage: s.can(adminv1.Role_ROLE_TENANT_ADMIN),
		Action:    acctURL("/console/rules", s.tenant, nil),
	}
	if form == nil {
		v.FormRegions = strings.Join(v.Regions, ", ")
		v.FormTags = strings.Join(v.Tags, "\n")
		v.FormNoRetained = v.NoRetainedData
	} else {
		v.FormRegions, v.FormTags, v.FormNoRetained = form.regions, form.tags, form.noRetain
		p = foldList(foldList(p, "rules.allowed_regions", splitItems(form.regions)), "rules.required_tags", nil)
		v.Problems = p
		v.RegionsProblem, v.TagsProblem = p.For("rules.allowed_regions"), p.For("rules.required_tags")
	}
	c.page(w, r, s, status, "Data rules", rulesNav, web.RulesPage(v))
}

// sortedTags returns tags as "key=value" sorted by key.
func sortedTags(tags map[string]string) []string {
	out := make([]string, 0, len(tags))
	for k, v := range tags {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
