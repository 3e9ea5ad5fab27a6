// Package console serves the web console under /console/: server-rendered
// pages (templ components of weir.dev/web) over the admin API.
//
// The console holds no privilege of its own. Each page calls the admin API
// through its generated Connect clients over an in-process transport, as
// the signed-in admin (the session's token is the bearer), so every role
// check, tenant filter and validation is the API's own.
//
// The session cookie holds a random session id and the admin token sealed
// with AES-GCM under a key derived from the master key, and an expiry
// (Deps.SessionTTL, at most the token's own expiry). The id is recorded in
// Deps.Sessions; every request checks it there (sign-out deletes it, so a
// copied cookie stops working at once) and checks the token with WhoAmI, so
// a revoked token ends its sessions at once too. POST
// forms carry a CSRF token bound to the session cookie (HMAC under another
// derived key), and cross-site POSTs (Origin or Sec-Fetch-Site) are refused.
// Every response carries a strict Content-Security-Policy (no inline script
// or style) and the other security headers.
//
// Writing a page: see routes.go for the table of routes and tenants.go for
// a complete example (a page type embedding base; a list, a form, inline
// validation problems, a redirect with a flash).
//
// Hazard: the admin token passes through here. It is never logged, never
// put in a URL, never rendered back into a page, and leaves the process only
// sealed inside the session cookie.
package console

import (
	"bytes"
	"crypto/rand"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/a-h/templ"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/web"
)

// Deps are what the console needs.
type Deps struct {
	// API is the admin API handler (server.Handler's Connect services); the
	// console serves its RPCs in-process. Required.
	API http.Handler
	// MasterKey is the control plane's master key; the console derives its
	// cookie keys from it under labels of its own. Nil: a random key, so
	// that sessions end when the process does.
	MasterKey []byte
	// SecureCookies marks every cookie Secure even when a request did not
	// come over TLS (the console behind a TLS-terminating proxy). Requests
	// over TLS get Secure cookies anyway.
	SecureCookies bool
	// SessionTTL bounds a session's life. Default 12h.
	SessionTTL time.Duration
	// Sessions records live sessions so that sign-out ends them on the
	// server (a copied cookie is refused once its session is signed out).
	// Nil: in this process's memory only.
	Sessions Sessions
	// Stopping is closed when the server begins to shut down: live streams
	// (server-sent events) end then, so that a graceful shutdown does not
	// wait for browsers to leave. Nil: never.
	Stopping <-chan struct{}
	// Now is the clock (nil: time.Now); Log receives internal errors (nil
	// discards).
	Now func() time.Time
	Log *slog.Logger
}

// base is what every page shares: the dependencies, the cookie keys, and
// the helpers that check the session (authed), render a page or an error,
// read a form and redirect with flashes. Each page is a type of its own
// that embeds the one *base (tenantsPage, providersPage, keysPage, ...: see
// routes.go); its handlers name their receiver c, as the base's helpers do.
type base struct {
	d    Deps
	keys *keys
}

// New returns the console's handler; it serves paths under /console/.
func New(d Deps) (http.Handler, error) {
	if d.API == nil {
		return nil, errors.New("console: no admin API handler")
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.SessionTTL <= 0 {
		d.SessionTTL = 12 * time.Hour
	}
	if d.Sessions == nil {
		d.Sessions = newMemSessions()
	}
	master := d.MasterKey
	if master == nil {
		master = make([]byte, 32)
		if _, err := rand.Read(master); err != nil {
			return nil, err
		}
	}
	k, err := deriveKeys(master)
	if err != nil {
		return nil, err
	}
	st, err := newStatic()
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	routes(mux, &base{d: d, keys: k}, st)
	return securityHeaders(withPeer(limitForms(mux))), nil
}

// MaxFormBytes bounds the body of a console request (its forms are a few
// kilobytes); a larger one is refused with 413 before any of it is used.
const MaxFormBytes = 256 << 10

// limitForms caps every request body at MaxFormBytes.
func limitForms(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
		}
		next.ServeHTTP(w, r)
	})
}

// readForm parses a POST's form; when it cannot (too large: 413; malformed:
// 400) it answers and returns false.
func (c *base) readForm(w http.ResponseWriter, r *http.Request) bool {
	err := r.ParseForm()
	if err == nil {
		return true
	}
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		c.bareError(w, r, http.StatusRequestEntityTooLarge, "This form is too large.")
		return false
	}
	c.bareError(w, r, http.StatusBadRequest, "This form could not be read.")
	return false
}

func (c *base) now() time.Time { return c.d.Now() }

// contentSecurityPolicy allows nothing but the console's own files: no
// inline script, no inline style, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// securityHeaders sets the headers every console response carries.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if !strings.HasPrefix(r.URL.Path, "/console/static/") {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

// session is one signed-in request: who it is, which tenant it looks at,
// its CSRF token and its API clients.
type session struct {
	// api are the admin API's clients as this admin.
	api *Clients
	// id is the session's id (Deps.Sessions).
	id []byte
	// admin is WhoAmI's answer: name, roles.
	admin   string
	role    string
	cluster bool
	// roles are the admin's role bindings (WhoAmI's), for pages that offer
	// a form only to the roles the API would let submit it.
	roles []*adminv1.RoleBinding
	// tenant is the tenant the tenant-scoped pages show ("" when none);
	// tenants those the admin may switch to.
	tenant  string
	tenants []string
	csrf    string
	flashes []web.Flash
	path    string
}

// meta is the PageMeta of a page of this session.
func (s *session) meta(title, nav string) web.PageMeta {
	return web.PageMeta{
		Title: title, Nav: nav,
		Admin: s.admin, Role: s.role, Cluster: s.cluster,
		Tenant: s.tenant, Tenants: s.tenants,
		CSRF: s.csrf, Path: s.path, Flashes: s.flashes,
	}
}

// flash adds a message to this response's page (for pages rendered without
// a redirect).
func (s *session) flash(kind, text string) {
	s.flashes = append(s.flashes, web.Flash{Kind: kind, Text: text})
}

// page renders body inside the layout with status.
func (c *base) page(w http.ResponseWriter, r *http.Request, s *session, status int, title, nav string, body templ.Component) {
	c.render(w, r, status, web.Layout(s.meta(title, nav), body))
}

// render writes a complete component as an HTML response. It renders into
// a buffer first, so that a failing component yields a clean 500.
func (c *base) render(w http.ResponseWriter, r *http.Request, status int, comp templ.Component) {
	var buf bytes.Buffer
	if err := comp.Render(r.Context(), &buf); err != nil {
		c.d.Log.Error("console: render", "path", r.URL.Path, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// redirect answers a POST with 303 See Other to path (a console path),
// carrying flashes to the next page.
func (c *base) redirect(w http.ResponseWriter, r *http.Request, path string, flashes ...web.Flash) {
	if len(flashes) > 0 {
		http.SetCookie(w, c.cookie(r, flashCookie, c.keys.signFlashes(flashes), time.Minute))
	}
	http.Redirect(w, r, path, http.StatusSeeOther)
}

// bareError renders an error page without the layout (no session).
func (c *base) bareError(w http.ResponseWriter, r *http.Request, status int, message string) {
	c.render(w, r, status, web.BareLayout(http.StatusText(status), nil, web.ErrorBody(status, message)))
}

// safeNext returns next when it is a path of the console (same site,
// relative, no scheme or host), else "/console/".
func safeNext(next string) string {
	const home = "/console/"
	if next == "" || !strings.HasPrefix(next, "/console/") || strings.HasPrefix(next, "//") ||
		strings.ContainsAny(next, "\\\r\n\t") {
		return home
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Path == "" {
		return home
	}
	if clean := path.Clean(u.Path); clean != "/console" && !strings.HasPrefix(clean, "/console/") ||
		strings.HasPrefix(clean, "/console/login") || clean != strings.TrimSuffix(u.Path, "/") {
		return home
	}
	return u.RequestURI()
}
