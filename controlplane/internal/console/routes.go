package console

import (
	"net/http"

	"weir.dev/web"
)

// routes registers every console route. Page authors: add one line per
// route below (method and path pattern, handler wrapped in c.authed), and
// the page's handlers and view in a file of their own (see tenants.go).
func (c *Console) routes(mux *http.ServeMux) {
	mux.Handle("GET /console/static/", c.static)
	mux.HandleFunc("GET /console/login", c.loginPage)
	mux.HandleFunc("POST /console/login", c.login)
	mux.Handle("POST /console/logout", c.authed(c.logout))
	mux.Handle("POST /console/tenant", c.authed(c.switchTenant))

	// Pages. Each group registers its own routes in a file of its own.
	mux.Handle("GET /console/tenants", c.authed(c.tenantsPage))
	mux.Handle("POST /console/tenants", c.authed(c.createTenant))
	mux.Handle("POST /console/tenants/limits", c.authed(c.setTenantLimits))
	c.operatorRoutes(mux) // routes_operator.go: health, providers, pools
	c.accountRoutes(mux)  // routes_account.go: keys, secrets, data rules, budgets, usage, calls

	// Anything else under /console/: a 404 inside the layout.
	mux.Handle("/console/", c.authed(c.notFound))
}

func (c *Console) notFound(w http.ResponseWriter, r *http.Request, s *session) {
	c.page(w, r, s, http.StatusNotFound, "Not found", "", web.ErrorBody(http.StatusNotFound, "There is no such page."))
}
