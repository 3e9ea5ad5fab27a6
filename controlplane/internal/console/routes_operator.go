package console

import "net/http"

// operatorRoutes registers the operator pages: pool health per edge (the
// console's home page, live over SSE), providers and pools (health.go,
// providers.go, providers_edit.go, pools.go).
func (c *Console) operatorRoutes(mux *http.ServeMux) {
	mux.Handle("GET /console/{$}", c.authed(c.healthPage))
	mux.Handle("GET /console/health/events", c.authed(c.healthEvents))
	mux.Handle("POST /console/health/reset", c.authed(c.resetMember))

	mux.Handle("GET /console/providers", c.authed(c.providersPage))
	mux.Handle("POST /console/providers", c.authed(c.createProvider))
	mux.Handle("GET /console/providers/{name}", c.authed(c.providerPage))
	mux.Handle("GET /console/providers/{name}/edit", c.authed(c.recordPage))
	mux.Handle("POST /console/providers/{name}/edit", c.authed(c.updateRecord))
	mux.Handle("POST /console/providers/{name}/delete", c.authed(c.deleteRecord))
	mux.Handle("POST /console/providers/{name}/share", c.authed(c.shareRecord))
	mux.Handle("POST /console/providers/{name}/unshare", c.authed(c.unshareRecord))
	mux.Handle("POST /console/providers/{name}/members", c.authed(c.addMember))
	mux.Handle("GET /console/providers/{name}/members/{member}", c.authed(c.memberPage))
	mux.Handle("POST /console/providers/{name}/members/{member}", c.authed(c.updateMember))
	mux.Handle("POST /console/providers/{name}/members/{member}/off", c.authed(c.memberOff))
	mux.Handle("POST /console/providers/{name}/members/{member}/on", c.authed(c.memberOn))
	mux.Handle("POST /console/providers/{name}/members/{member}/remove", c.authed(c.removeMember))
}
