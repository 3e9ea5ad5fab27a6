package console

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"connectrpc.com/connect"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/web"
)

// accountRoutes registers the tenant account pages: keys, secrets, data
// rules, budgets, usage and calls. Every page shows the session's current
// tenant; every form posts to a URL that names that tenant (?tenant=), so a
// form submitted after the switcher moved elsewhere in another tab still
// changes the tenant the page showed.
func accountRoutes(mux *http.ServeMux, b *base) {
	apiKeys := keysPage{b}
	mux.Handle("GET /console/keys", b.authed(apiKeys.show))
	mux.Handle("POST /console/keys", b.authed(apiKeys.createKey))
	mux.Handle("POST /console/keys/{name}/revoke", b.authed(apiKeys.revokeKey))

	secrets := secretsPage{b}
	mux.Handle("GET /console/secrets", b.authed(secrets.show))
	mux.Handle("POST /console/secrets", b.authed(secrets.setSecret))
	mux.Handle("POST /console/secrets/{name}/delete", b.authed(secrets.deleteSecret))

	rules := rulesPage{b}
	mux.Handle("GET /console/rules", b.authed(rules.show))
	mux.Handle("POST /console/rules", b.authed(rules.setRules))

	budgets := budgetsPage{b}
	mux.Handle("GET /console/budgets", b.authed(budgets.show))
	mux.Handle("POST /console/budgets", b.authed(budgets.setBudget))
	mux.Handle("POST /console/budgets/{name}/delete", b.authed(budgets.deleteBudget))

	usage := usagePage{b}
	mux.Handle("GET /console/usage", b.authed(usage.show))
	mux.Handle("GET /console/usage/export.csv", b.authed(usage.exportUsageCSV))
	mux.Handle("GET /console/usage/export.json", b.authed(usage.exportUsageJSON))

	calls := callsPage{b}
	mux.Handle("GET /console/calls", b.authed(calls.show))
	mux.Handle("GET /console/calls/{id}", b.authed(calls.call))
}

// can reports whether the session's admin holds one of roles on the current
// tenant (cluster admins hold every role). It only decides which forms a
// page offers: the API makes the real check on every change.
func (s *session) can(roles ...adminv1.Role) bool {
	if s.cluster {
		return true
	}
	for _, b := range s.roles {
		if b.GetTenant() == s.tenant && slices.Contains(roles, b.GetRole()) {
			return true
		}
	}
	return false
}

// acctURL is a console path pinned to tenant (?tenant=), with extra query
// values.
func acctURL(path, tenant string, extra url.Values) string {
	q := url.Values{}
	for k, vs := range extra {
		for _, v := range vs {
			if v != "" {
				q.Add(k, v)
			}
		}
	}
	if tenant != "" {
		q.Set("tenant", tenant)
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// needTenant renders the page of a tenant-scoped view when the admin has no
// tenant to look at; it reports whether it did.
func (c *base) needTenant(w http.ResponseWriter, r *http.Request, s *session, title, nav string) bool {
	if s.tenant != "" {
		return false
	}
	c.page(w, r, s, http.StatusOK, title, nav, web.NoTenant())
	return true
}

// splitItems splits a form value listing items separated by commas, spaces
// or new lines; empty items are dropped.
func splitItems(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
}

// foldList moves the problems of a list's items ("field[2]", "field[k]")
// onto the list's one input, field, each prefixed with the item it is
// about (items[i] for an index, else the key), so that they show next to
// that input and the summary links to it.
func foldList(p web.Problems, field string, items []string) web.Problems {
	out := web.Problems{Message: p.Message}
	for _, fp := range p.List {
		if rest, ok := strings.CutPrefix(fp.Field, field+"["); ok {
			idx, _, _ := strings.Cut(rest, "]")
			label := idx
			if i, err := strconv.Atoi(idx); err == nil && i >= 0 && i < len(items) {
				label = items[i]
			}
			fp = web.FieldProblem{Field: field, Message: "“" + label + "”: " + fp.Message}
		}
		out.List = append(out.List, fp)
		if fp.Field == "" {
			continue
		}
		if out.Fields == nil {
			out.Fields = map[string]string{}
		}
		if old, ok := out.Fields[fp.Field]; ok {
			out.Fields[fp.Field] = old + "; " + fp.Message
		} else {
			out.Fields[fp.Field] = fp.Message
		}
	}
	return out
}

// formError is problemsOf for a form: an Unauthenticated error ends the
// session (done reports that the response was written).
func (c *base) formError(w http.ResponseWriter, r *http.Request, s *session, err error) (p web.Problems, status int, done bool) {
	if connect.CodeOf(err) == connect.CodeUnauthenticated {
		c.fail(w, r, s, err)
		return p, 0, true
	}
	p, status = problemsOf(err)
	if status >= 500 {
		c.d.Log.Error("console: api", "path", r.URL.Path, "err", err)
	}
	return p, status, false
}

// addProblem adds a problem found before calling the API (a value the
// console could not turn into the request, such as a malformed amount).
func addProblem(p *web.Problems, field, message string) {
	if p.Fields == nil {
		p.Fields = map[string]string{}
	}
	p.List = append(p.List, web.FieldProblem{Field: field, Message: message})
	if old, ok := p.Fields[field]; ok {
		p.Fields[field] = old + "; " + message
	} else {
		p.Fields[field] = message
	}
	if len(p.List) == 1 {
		p.Message = "The request was refused: 1 problem."
	} else {
		p.Message = "The request was refused: " + strconv.Itoa(len(p.List)) + " problems."
	}
}
