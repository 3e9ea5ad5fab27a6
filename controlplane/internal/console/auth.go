package console

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/web"
)

// sessionPages are the handlers that start, end and steer a session: the
// login form and sign-in (before there is a session), sign-out and the
// tenant switcher.
type sessionPages struct{ *base }

// pageFunc is a page handler: it runs only for a signed-in admin whose
// token the API still accepts, and (for POST) after the CSRF and origin
// checks passed.
type pageFunc func(w http.ResponseWriter, r *http.Request, s *session)

// apiTimeout bounds the API calls made to set up a request.
const apiTimeout = 10 * time.Second

// authed wraps a page handler: it opens the session cookie, checks the
// token with WhoAmI (a revoked or expired token ends the session at once),
// checks CSRF and origin on POST, picks the tenant and reads the flashes.
func (c *base) authed(h pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ck, err := r.Cookie(sessionCookie)
		if err != nil {
			c.toLogin(w, r)
			return
		}
		sid, token, err := c.keys.open(ck.Value, c.now())
		if err != nil {
			c.clearCookie(w, r, sessionCookie)
			c.toLogin(w, r)
			return
		}
		active, err := c.d.Sessions.Active(r.Context(), sid, c.now())
		if err != nil {
			c.d.Log.Error("console: session check", "err", err)
			c.bareError(w, r, http.StatusServiceUnavailable, "The session could not be checked. Try again in a moment.")
			return
		}
		if !active {
			c.clearCookie(w, r, sessionCookie)
			c.toLoginWith(w, r, web.Flash{Kind: web.FlashInfo, Text: "Your session has ended; sign in again."})
			return
		}
		if r.Method == http.MethodPost {
			// Checked before any API call, so a forged request costs nothing
			// and reveals nothing.
			if !c.sameOrigin(r) {
				c.bareError(w, r, http.StatusForbidden, "This request came from another site and was refused.")
				return
			}
			if !c.readForm(w, r) {
				return
			}
			if !c.keys.checkCSRF("session", ck.Value, r.PostFormValue(web.CSRFFieldName)) {
				c.bareError(w, r, http.StatusForbidden, "This form has expired or did not come from this console. Go back, reload the page and try again.")
				return
			}
		}
		api := newClients(c.d.API, token)
		ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
		defer cancel()
		who, err := api.Admins.WhoAmI(ctx, connect.NewRequest(&adminv1.WhoAmIRequest{}))
		if err != nil {
			if connect.CodeOf(err) == connect.CodeUnauthenticated {
				c.clearCookie(w, r, sessionCookie)
				c.toLoginWith(w, r, web.Flash{Kind: web.FlashInfo, Text: "Your session has ended; sign in again."})
				return
			}
			if retry, ok := throttled(err); ok {
				w.Header().Set("Retry-After", retry)
				c.bareError(w, r, http.StatusTooManyRequests, "Too many failed sign-ins from your address. Wait "+retry+" s and try again.")
				return
			}
			c.d.Log.Error("console: whoami", "err", err)
			c.bareError(w, r, http.StatusBadGateway, "The admin API did not answer. Try again in a moment.")
			return
		}
		s := &session{api: api, id: sid, csrf: c.keys.csrfToken("session", ck.Value), path: r.URL.RequestURI()}
		admin := who.Msg.GetAdmin()
		s.admin = admin.GetName()
		s.roles = admin.GetRoles()
		s.cluster, s.role, s.tenants = describeRoles(admin.GetRoles())
		if s.cluster {
			if s.tenants, err = allTenants(ctx, api); err != nil {
				c.fail(w, r, s, err)
				return
			}
		}
		s.tenant = pickTenant(r, s.tenants)
		if fc, err := r.Cookie(flashCookie); err == nil {
			s.flashes = c.keys.openFlashes(fc.Value)
			c.clearCookie(w, r, flashCookie)
		}
		h(w, r, s)
	})
}

// describeRoles returns whether the admin is a cluster admin, its roles for
// people, and the tenants it holds a role on (in the order of its roles).
func describeRoles(roles []*adminv1.RoleBinding) (cluster bool, role string, tenants []string) {
	var parts []string
	for _, b := range roles {
		switch b.GetRole() {
		case adminv1.Role_ROLE_CLUSTER_ADMIN:
			cluster = true
			continue
		case adminv1.Role_ROLE_TENANT_ADMIN:
			parts = append(parts, "tenant admin of "+b.GetTenant())
		case adminv1.Role_ROLE_PROVIDER_ADMIN:
			parts = append(parts, "provider admin of "+b.GetTenant())
		case adminv1.Role_ROLE_COST_OWNER:
			parts = append(parts, "cost owner of "+b.GetTenant())
		}
		if t := b.GetTenant(); t != "" && !slices.Contains(tenants, t) {
			tenants = append(tenants, t)
		}
	}
	if cluster {
		return true, "cluster admin", tenants
	}
	return false, strings.Join(parts, ", "), tenants
}

// allTenants lists every tenant name the caller can see.
func allTenants(ctx context.Context, api *Clients) ([]string, error) {
	var names []string
	tok := ""
	for {
		resp, err := api.Tenants.ListTenants(ctx, connect.NewRequest(&adminv1.ListTenantsRequest{PageSize: 1000, PageToken: tok}))
		if err != nil {
			return nil, err
		}
		for _, t := range resp.Msg.GetTenants() {
			names = append(names, t.GetName())
		}
		if tok = resp.Msg.GetNextPageToken(); tok == "" {
			return names, nil
		}
	}
}

// pickTenant returns the tenant a request looks at: the "tenant" query
// parameter, else the switcher's cookie, else the first of tenants; only
// ever one of tenants ("" when there is none).
func pickTenant(r *http.Request, tenants []string) string {
	if t := r.URL.Query().Get("tenant"); t != "" && slices.Contains(tenants, t) {
		return t
	}
	if ck, err := r.Cookie(tenantCookie); err == nil && slices.Contains(tenants, ck.Value) {
		return ck.Value
	}
	if len(tenants) > 0 {
		return tenants[0]
	}
	return ""
}

// sameOrigin reports whether a POST came from the console's own pages:
// Sec-Fetch-Site, when sent, must be same-origin (or none: typed by the
// user), and Origin, when sent, must name this host.
func (c *base) sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
		return false
	}
	if c.secure(r) && u.Scheme != "https" {
		return false
	}
	return u.Scheme == "http" || u.Scheme == "https"
}

// toLogin redirects to the login page, coming back to this page (GET) or
// to the console's home afterwards.
func (c *base) toLogin(w http.ResponseWriter, r *http.Request) { c.toLoginWith(w, r) }

func (c *base) toLoginWith(w http.ResponseWriter, r *http.Request, flashes ...web.Flash) {
	target := "/console/login"
	if r.Method == http.MethodGet {
		if next := safeNext(r.URL.RequestURI()); next != "/console/" {
			target += "?next=" + url.QueryEscape(next)
		}
	}
	c.redirect(w, r, target, flashes...)
}

// loginForm shows the login form. It sets the pre-session cookie the form's
// CSRF token is bound to.
func (c sessionPages) loginForm(w http.ResponseWriter, r *http.Request) {
	var flashes []web.Flash
	if fc, err := r.Cookie(flashCookie); err == nil {
		flashes = c.keys.openFlashes(fc.Value)
		c.clearCookie(w, r, flashCookie)
	}
	c.renderLogin(w, r, http.StatusOK, safeNext(r.URL.Query().Get("next")), "", flashes)
}

func (c sessionPages) renderLogin(w http.ResponseWriter, r *http.Request, status int, next, problem string, flashes []web.Flash) {
	pre := ""
	if ck, err := r.Cookie(loginCookie); err == nil && len(ck.Value) >= 32 {
		pre = ck.Value
	} else {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		pre = base64.RawURLEncoding.EncodeToString(b)
		http.SetCookie(w, c.cookie(r, loginCookie, pre, time.Hour))
	}
	v := web.LoginView{CSRF: c.keys.csrfToken("login", pre), Next: next, Error: problem}
	c.render(w, r, status, web.BareLayout("Sign in", flashes, web.LoginPage(v)))
}

// login checks the pasted token with WhoAmI and starts a session. The
// token is never echoed back, logged or put in a URL.
func (c sessionPages) login(w http.ResponseWriter, r *http.Request) {
	if !c.sameOrigin(r) {
		c.bareError(w, r, http.StatusForbidden, "This request came from another site and was refused.")
		return
	}
	pre, err := r.Cookie(loginCookie)
	if err == nil && !c.readForm(w, r) {
		return
	}
	if err != nil || !c.keys.checkCSRF("login", pre.Value, r.PostFormValue(web.CSRFFieldName)) {
		c.bareError(w, r, http.StatusForbidden, "This form has expired or did not come from this console. Go back, reload the page and try again.")
		return
	}
	next := safeNext(r.PostFormValue("next"))
	token := strings.TrimSpace(r.PostFormValue("token"))
	if token == "" {
		c.renderLogin(w, r, http.StatusUnprocessableEntity, next, "Paste an admin token.", nil)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
	defer cancel()
	who, err := newClients(c.d.API, token).Admins.WhoAmI(ctx, connect.NewRequest(&adminv1.WhoAmIRequest{}))
	if err != nil {
		if connect.CodeOf(err) == connect.CodeUnauthenticated {
			c.renderLogin(w, r, http.StatusUnauthorized, next, "That token was not accepted: it is unknown, revoked or expired.", nil)
			return
		}
		if retry, ok := throttled(err); ok {
			w.Header().Set("Retry-After", retry)
			c.renderLogin(w, r, http.StatusTooManyRequests, next, "Too many failed sign-ins from your address. Wait "+retry+" s and try again.", nil)
			return
		}
		c.d.Log.Error("console: login whoami", "err", err)
		c.renderLogin(w, r, http.StatusBadGateway, next, "The admin API did not answer. Try again in a moment.", nil)
		return
	}
	expires := c.now().Add(c.d.SessionTTL)
	if e := who.Msg.GetToken().GetExpiresAt(); e != nil && e.AsTime().Before(expires) {
		expires = e.AsTime()
	}
	sid, err := newSessionID()
	if err == nil {
		err = c.d.Sessions.Start(ctx, sid, expires)
	}
	var value string
	if err == nil {
		value, err = c.keys.seal(sid, token, expires)
	}
	if err != nil {
		c.d.Log.Error("console: seal session", "err", err)
		c.bareError(w, r, http.StatusInternalServerError, "The session could not be started.")
		return
	}
	http.SetCookie(w, c.cookie(r, sessionCookie, value, expires.Sub(c.now())))
	c.clearCookie(w, r, loginCookie)
	c.d.Log.Info("console: signed in", "admin", who.Msg.GetAdmin().GetName())
	c.redirect(w, r, next)
}

// logout ends the session on the server (Sessions.End: a copy of the cookie
// is refused from then on) and clears its cookies. The token itself stays
// valid: it may be in use elsewhere, e.g. by the CLI.
func (c sessionPages) logout(w http.ResponseWriter, r *http.Request, s *session) {
	if err := c.d.Sessions.End(r.Context(), s.id); err != nil {
		c.d.Log.Error("console: end session", "err", err)
		c.bareError(w, r, http.StatusServiceUnavailable, "The session could not be ended. Try again in a moment.")
		return
	}
	c.clearCookie(w, r, sessionCookie)
	c.clearCookie(w, r, tenantCookie)
	c.redirect(w, r, "/console/login", web.Flash{Kind: web.FlashInfo, Text: "Signed out."})
}

// switchTenant remembers the tenant picked with the switcher and goes back
// to the page it was picked on.
func (c sessionPages) switchTenant(w http.ResponseWriter, r *http.Request, s *session) {
	t := r.PostFormValue("tenant")
	next := safeNext(r.PostFormValue("next"))
	if !slices.Contains(s.tenants, t) {
		c.redirect(w, r, next, web.Flash{Kind: web.FlashError, Text: "No such tenant."})
		return
	}
	http.SetCookie(w, c.cookie(r, tenantCookie, t, 30*24*time.Hour))
	c.redirect(w, r, withoutTenantParam(next))
}

// withoutTenantParam drops a "tenant" query parameter, which would override
// the switcher's choice.
func withoutTenantParam(p string) string {
	u, err := url.Parse(p)
	if err != nil {
		return "/console/"
	}
	q := u.Query()
	if !q.Has("tenant") {
		return p
	}
	q.Del("tenant")
	u.RawQuery = q.Encode()
	return u.RequestURI()
}

// throttled reports whether an API error refused the request because its
// address failed to authenticate too often (the admin API's limit, which
// counts console sign-ins too), and the Retry-After seconds it gave.
func throttled(err error) (retry string, ok bool) {
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeResourceExhausted {
		return "", false
	}
	retry = ce.Meta().Get("Retry-After")
	if retry == "" {
		retry = "1"
	}
	return retry, true
}
