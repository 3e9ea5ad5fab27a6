package console

import (
	"net/http"

	"weir.dev/web"
)

// routes registers every console route. Page authors: a page is a type
// embedding *base with its handlers as methods (see tenants.go); add one
// line per route below or in the group's routes file (method and path
// pattern, handler wrapped in b.authed), and the page's type, handlers and
// view in a file of their own.
func routes(mux *http.ServeMux, b *base, static http.Handler) {
	mux.Handle("GET /console/static/", static)
	sessions := sessionPages{b}
	mux.HandleFunc("GET /console/login", sessions.loginForm)
	mux.HandleFunc("POST /console/login", sessions.login)
	mux.Handle("POST /console/logout", b.authed(sessions.logout))
	mux.Handle("POST /console/tenant", b.authed(sessions.switchTenant))

	// Pages. Each group registers its own routes in a file of its own.
	tenants := tenantsPage{b}
	mux.Handle("GET /console/tenants", b.authed(tenants.show))
	mux.Handle("POST /console/tenants", b.authed(tenants.createTenant))
	mux.Handle("POST /console/tenants/limits", b.authed(tenants.setTenantLimits))
	operatorRoutes(mux, b) // routes_operator.go: health, providers, pools
	accountRoutes(mux, b)  // routes_account.go: keys, secrets, data rules, budgets, usage, calls

	// Anything else under /console/: a 404 inside the layout.
	mux.Handle("/console/", b.authed(b.notFound))
}

func (c *base) notFound(w http.ResponseWriter, r *http.Request, s *session) {
	c.page(w, r, s, http.StatusNotFound, "Not found", "", web.ErrorBody(http.StatusNotFound, "There is no such page."))
}
