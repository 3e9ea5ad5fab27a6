package console

import (
	"net/http"

	"weir.dev/web"
)

// operatorRoutes registers the operator pages: pool health per edge (the
// console's home page), providers and pools.
func (c *Console) operatorRoutes(mux *http.ServeMux) {
	mux.Handle("GET /console/{$}", c.authed(c.home))
}

// home is the pool health page (a placeholder until it is written).
func (c *Console) home(w http.ResponseWriter, r *http.Request, s *session) {
	c.page(w, r, s, http.StatusOK, "Health", "health", web.HomePage())
}
