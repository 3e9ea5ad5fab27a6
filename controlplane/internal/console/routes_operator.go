package console

import "net/http"

// operatorRoutes registers the operator pages: pool health per edge (the
// console's home page, live over SSE; health.go), the providers list
// (providers.go), a record's page (providers_detail.go), its settings form
// (providers_edit.go) and a member's form (pools.go).
func operatorRoutes(mux *http.ServeMux, b *base) {
	health := healthPage{b}
	mux.Handle("GET /console/{$}", b.authed(health.show))
	mux.Handle("GET /console/health/events", b.authed(health.events))
	mux.Handle("POST /console/health/reset", b.authed(health.resetMember))

	providers := providersPage{b}
	mux.Handle("GET /console/providers", b.authed(providers.show))
	mux.Handle("POST /console/providers", b.authed(providers.createProvider))

	record := providerPage{b}
	mux.Handle("GET /console/providers/{name}", b.authed(record.show))
	mux.Handle("POST /console/providers/{name}/delete", b.authed(record.deleteRecord))
	mux.Handle("POST /console/providers/{name}/share", b.authed(record.shareRecord))
	mux.Handle("POST /console/providers/{name}/unshare", b.authed(record.unshareRecord))
	mux.Handle("POST /console/providers/{name}/members", b.authed(record.addMember))

	settings := recordEditPage{b}
	mux.Handle("GET /console/providers/{name}/edit", b.authed(settings.show))
	mux.Handle("POST /console/providers/{name}/edit", b.authed(settings.updateRecord))

	member := memberEditPage{b}
	mux.Handle("GET /console/providers/{name}/members/{member}", b.authed(member.show))
	mux.Handle("POST /console/providers/{name}/members/{member}", b.authed(member.updateMember))
	mux.Handle("POST /console/providers/{name}/members/{member}/off", b.authed(member.memberOff))
	mux.Handle("POST /console/providers/{name}/members/{member}/on", b.authed(member.memberOn))
	mux.Handle("POST /console/providers/{name}/members/{member}/remove", b.authed(member.removeMember))
}
