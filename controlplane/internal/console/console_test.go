package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/controlplane/internal/console"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

func TestLogin(t *testing.T) {
	t.Parallel()
	h := newHarness(t)

	t.Run("success", func(t *testing.T) {
		b := h.browser(t)
		b.page(t, "/console/login", http.StatusOK)
		resp := b.post(t, "/console/login", url.Values{"csrf": {b.CSRF}, "token": {h.Tokens[cluster]}}, nil)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/" {
			t.Fatalf("status %d, location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		ck := setCookie(t, resp, "weir_session")
		if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/console" || ck.Secure {
			t.Errorf("session cookie attributes: %+v", ck)
		}
		if ck.MaxAge < int((12*time.Hour-time.Minute)/time.Second) || ck.MaxAge > int(12*time.Hour/time.Second) {
			t.Errorf("session cookie Max-Age %d, want 12h", ck.MaxAge)
		}
		if strings.Contains(ck.Value, h.Tokens[cluster]) || strings.Contains(ck.Value, strings.TrimPrefix(h.Tokens[cluster], "weir_")) {
			t.Error("the session cookie holds the token in the clear")
		}
		doc := b.page(t, "/console/", http.StatusOK)
		if got := text(find(t, doc, "admin-name")); got != cluster {
			t.Errorf("admin-name = %q", got)
		}
		if got := text(find(t, doc, "admin-role")); got != "cluster admin" {
			t.Errorf("admin-role = %q", got)
		}
		for _, n := range []string{"health", "providers", "tenants", "keys", "secrets", "budgets", "usage", "calls"} {
			find(t, doc, "nav-"+n)
		}
		if attr(find(t, doc, "nav-health"), "aria-current") != "page" {
			t.Error("health is not the current nav item")
		}
		find(t, doc, "tenant-switcher")
		find(t, doc, "logout-form")
	})

	t.Run("wrong token", func(t *testing.T) {
		b := h.browser(t)
		b.page(t, "/console/login", http.StatusOK)
		bad := "weir_adm_not-a-real-token-0123456789"
		resp := b.post(t, "/console/login", url.Values{"csrf": {b.CSRF}, "token": {bad}}, nil)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("status %d, want 401", resp.StatusCode)
		}
		doc := b.doc(t)
		if got := text(find(t, doc, "problem-token")); !strings.Contains(got, "not accepted") {
			t.Errorf("problem = %q", got)
		}
		in := find(t, doc, "input-token")
		if attr(in, "aria-invalid") != "true" || !strings.Contains(attr(in, "aria-describedby"), "f-token-problem") {
			t.Errorf("token input not marked invalid: %v", in.Attr)
		}
		if strings.Contains(string(b.Last), bad) {
			t.Error("the refused token is echoed back")
		}
		if b.cookie("weir_session") != "" {
			t.Error("a session cookie was set")
		}
	})

	t.Run("empty token", func(t *testing.T) {
		b := h.browser(t)
		b.page(t, "/console/login", http.StatusOK)
		if resp := b.post(t, "/console/login", url.Values{"csrf": {b.CSRF}}, nil); resp.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("status %d, want 422", resp.StatusCode)
		}
		find(t, b.doc(t), "problem-token")
	})

	t.Run("next", func(t *testing.T) {
		b := h.browser(t)
		resp := b.get(t, "/console/tenants?x=1")
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("unauthenticated: status %d, want 303", resp.StatusCode)
		}
		loc := resp.Header.Get("Location")
		if loc != "/console/login?next="+url.QueryEscape("/console/tenants?x=1") {
			t.Fatalf("location %q", loc)
		}
		doc := b.page(t, loc, http.StatusOK)
		next := first(doc, func(n *htmlNode) bool { return n.Data == "input" && attr(n, "name") == "next" })
		if next == nil || attr(next, "value") != "/console/tenants?x=1" {
			t.Fatalf("next input: %v", next)
		}
		resp = b.post(t, "/console/login", url.Values{"csrf": {b.CSRF}, "token": {h.Tokens[tadmA]}, "next": {"/console/tenants?x=1"}}, nil)
		if got := resp.Header.Get("Location"); got != "/console/tenants?x=1" {
			t.Fatalf("after login: location %q", got)
		}
		// An off-site next is ignored.
		b = h.browser(t)
		b.page(t, "/console/login", http.StatusOK)
		resp = b.post(t, "/console/login", url.Values{"csrf": {b.CSRF}, "token": {h.Tokens[tadmA]}, "next": {"//evil.example/"}}, nil)
		if got := resp.Header.Get("Location"); got != "/console/" {
			t.Fatalf("off-site next: location %q", got)
		}
	})

	t.Run("login CSRF", func(t *testing.T) {
		b := h.browser(t)
		b.page(t, "/console/login", http.StatusOK)
		if resp := b.post(t, "/console/login", url.Values{"token": {h.Tokens[cluster]}}, nil); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("no CSRF token: status %d, want 403", resp.StatusCode)
		}
		if resp := b.post(t, "/console/login", url.Values{"csrf": {b.CSRF}, "token": {h.Tokens[cluster]}},
			http.Header{"Origin": {"https://evil.example"}}); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("cross-site: status %d, want 403", resp.StatusCode)
		}
		if b.cookie("weir_session") != "" {
			t.Error("a session cookie was set")
		}
	})

	if logs := h.Logs.String(); strings.Contains(logs, h.Tokens[cluster]) || strings.Contains(logs, h.Tokens[tadmA]) {
		t.Error("a token appears in the logs")
	}
}

func TestSecureCookieOverTLS(t *testing.T) {
	t.Parallel()
	h := newHarnessTLS(t)
	b := h.browser(t)
	b.page(t, "/console/login", http.StatusOK)
	resp := b.post(t, "/console/login", url.Values{"csrf": {b.CSRF}, "token": {h.Tokens[cluster]}}, nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("status %d\n%s", resp.StatusCode, b.Last)
	}
	if ck := setCookie(t, resp, "weir_session"); !ck.Secure || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Fatalf("session cookie over TLS: %+v", ck)
	}
	b.page(t, "/console/tenants", http.StatusOK)
	// A plain-HTTP Origin is refused on an HTTPS console.
	if resp := b.post(t, "/console/tenants", url.Values{"csrf": {b.CSRF}, "name": {"x"}},
		http.Header{"Origin": {strings.Replace(h.URL, "https://", "http://", 1)}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("http Origin on https: status %d, want 403", resp.StatusCode)
	}
}

func TestSessionEnds(t *testing.T) {
	t.Parallel()
	h := newHarness(t)

	t.Run("token revoked", func(t *testing.T) {
		b := h.login(t, tadmA)
		b.page(t, "/console/tenants", http.StatusOK)
		api := h.API(tadmA)
		who, err := api.Admins.WhoAmI(context.Background(), connect.NewRequest(&adminv1.WhoAmIRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := api.Admins.RevokeAdminToken(context.Background(), connect.NewRequest(&adminv1.RevokeAdminTokenRequest{
			Id: who.Msg.GetToken().GetId()})); err != nil {
			t.Fatal(err)
		}
		resp := b.get(t, "/console/tenants")
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/console/login") {
			t.Fatalf("after revocation: status %d, location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		if ck := setCookie(t, resp, "weir_session"); ck.MaxAge >= 0 {
			t.Errorf("session cookie not cleared: %+v", ck)
		}
		doc := b.page(t, resp.Header.Get("Location"), http.StatusOK)
		if got := text(find(t, doc, "flash-info")); !strings.Contains(got, "session has ended") {
			t.Errorf("flash = %q", got)
		}
	})

	t.Run("expired", func(t *testing.T) {
		b := h.login(t, tadmB)
		h.Clock.Advance(13 * time.Hour)
		defer h.Clock.Advance(-13 * time.Hour)
		if resp := b.get(t, "/console/tenants"); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("expired session: status %d, want 303", resp.StatusCode)
		}
	})

	t.Run("tampered", func(t *testing.T) {
		b := h.browser(t)
		u, _ := url.Parse(h.URL + "/console/")
		b.c.Jar.SetCookies(u, []*http.Cookie{{Name: "weir_session", Value: "AAAA" + strings.Repeat("x", 60), Path: "/console"}})
		if resp := b.get(t, "/console/tenants"); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("forged session: status %d, want 303", resp.StatusCode)
		}
	})

	t.Run("logout", func(t *testing.T) {
		b := h.login(t, cluster)
		resp := b.post(t, "/console/logout", url.Values{"csrf": {b.CSRF}}, nil)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/login" {
			t.Fatalf("logout: status %d, location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		if b.cookie("weir_session") != "" {
			t.Fatal("session cookie kept after logout")
		}
		if resp := b.get(t, "/console/"); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("after logout: status %d, want 303", resp.StatusCode)
		}
	})

	// A copy of the cookie (stolen, or kept by a second browser) no longer
	// works once its session signs out: the session ends on the server.
	t.Run("logout ends copied cookies", func(t *testing.T) {
		b := h.login(t, cluster)
		other := h.login(t, cluster) // another session, which must go on
		copied := b.cookie("weir_session")
		thief := h.browser(t)
		u, _ := url.Parse(h.URL + "/console/")
		thief.c.Jar.SetCookies(u, []*http.Cookie{{Name: "weir_session", Value: copied, Path: "/console"}})
		if resp := thief.get(t, "/console/tenants"); resp.StatusCode != http.StatusOK {
			t.Fatalf("copied cookie before logout: status %d, want 200", resp.StatusCode)
		}
		if resp := b.post(t, "/console/logout", url.Values{"csrf": {b.CSRF}}, nil); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("logout: status %d", resp.StatusCode)
		}
		resp := thief.get(t, "/console/tenants")
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/console/login") {
			t.Fatalf("copied cookie after logout: status %d, location %q; want a redirect to sign in", resp.StatusCode, resp.Header.Get("Location"))
		}
		if resp := other.get(t, "/console/tenants"); resp.StatusCode != http.StatusOK {
			t.Fatalf("another session after logout: status %d, want 200", resp.StatusCode)
		}
	})
}

func TestCSRF(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	b := h.login(t, cluster)
	other := h.login(t, cluster) // another session: its token must not work here
	if other.CSRF == b.CSRF {
		t.Fatal("two sessions share a CSRF token")
	}
	for _, tc := range []struct {
		name   string
		values url.Values
		header http.Header
	}{
		{"missing token", url.Values{"name": {"x1"}}, nil},
		{"wrong token", url.Values{"name": {"x2"}, "csrf": {"AAAA"}}, nil},
		{"other session's token", url.Values{"name": {"x3"}, "csrf": {other.CSRF}}, nil},
		{"cross-site origin", url.Values{"name": {"x4"}, "csrf": {b.CSRF}}, http.Header{"Origin": {"https://evil.example"}}},
		{"null origin", url.Values{"name": {"x5"}, "csrf": {b.CSRF}}, http.Header{"Origin": {"null"}}},
		{"cross-site fetch", url.Values{"name": {"x6"}, "csrf": {b.CSRF}}, http.Header{"Sec-Fetch-Site": {"cross-site"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := b.post(t, "/console/tenants", tc.values, tc.header)
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("status %d, want 403", resp.StatusCode)
			}
			find(t, b.doc(t), "error-message")
		})
	}
	resp, err := h.API(cluster).Tenants.ListTenants(context.Background(), connect.NewRequest(&adminv1.ListTenantsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.Msg.GetTenants()); n != 2 {
		t.Fatalf("%d tenants after refused POSTs, want 2", n)
	}
	// The same form with the right token and a same-origin fetch works.
	b.submit(t, "/console/tenants", url.Values{"name": {"ok1"}}, http.StatusOK)
}

func TestTenantsPage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)

	t.Run("cluster admin", func(t *testing.T) {
		b := h.login(t, cluster)
		doc := b.page(t, "/console/tenants", http.StatusOK)
		find(t, doc, "tenant-a")
		find(t, doc, "tenant-b")
		find(t, doc, "tenant-create-form")
		if attr(find(t, doc, "nav-tenants"), "aria-current") != "page" {
			t.Error("tenants is not the current nav item")
		}
		opts := all(find(t, doc, "tenant-select"), func(n *htmlNode) bool { return n.Data == "option" })
		if len(opts) != 2 {
			t.Errorf("switcher offers %d tenants, want 2", len(opts))
		}

		doc = b.submit(t, "/console/tenants", url.Values{"name": {"acme"}}, http.StatusOK)
		if got := text(find(t, doc, "flash-ok")); !strings.Contains(got, "acme") {
			t.Errorf("flash = %q", got)
		}
		find(t, doc, "tenant-acme")
		// The flash is shown once.
		if doc := b.page(t, "/console/tenants", http.StatusOK); has(doc, "flash-ok") {
			t.Error("flash shown twice")
		}
	})

	t.Run("bad name", func(t *testing.T) {
		b := h.login(t, cluster)
		b.page(t, "/console/tenants", http.StatusOK)
		doc := b.submit(t, "/console/tenants", url.Values{"name": {"Bad Name!"}}, http.StatusUnprocessableEntity)
		p := find(t, doc, "problem-name")
		if !strings.Contains(text(p), "a-z") {
			t.Errorf("problem = %q", text(p))
		}
		in := find(t, doc, "input-name")
		if attr(in, "aria-invalid") != "true" || attr(in, "value") != "Bad Name!" {
			t.Errorf("input: %v", in.Attr)
		}
		if !strings.Contains(attr(in, "aria-describedby"), attr(p, "id")) || attr(p, "id") == "" {
			t.Errorf("aria-describedby %q does not point at the problem %q", attr(in, "aria-describedby"), attr(p, "id"))
		}
		label := first(doc, func(n *htmlNode) bool { return n.Data == "label" && attr(n, "for") == attr(in, "id") })
		if label == nil {
			t.Error("the input has no label")
		}
		if len(findAll(doc, "form-problem")) != 1 {
			t.Error("the summary does not list the problem")
		}
		// A duplicate is a page-level problem.
		doc = b.submit(t, "/console/tenants", url.Values{"name": {"a"}}, http.StatusConflict)
		find(t, doc, "form-problems-message")
	})

	t.Run("tenant admin sees only their tenant", func(t *testing.T) {
		b := h.login(t, tadmA)
		doc := b.page(t, "/console/tenants", http.StatusOK)
		find(t, doc, "tenant-a")
		if has(doc, "tenant-b") {
			t.Error("tenant admin of a sees tenant b")
		}
		if has(doc, "tenant-create-form") || has(doc, "tenant-switcher") {
			t.Error("tenant admin gets the create form or the switcher")
		}
		if got := text(find(t, doc, "tenant-current")); got != "a" {
			t.Errorf("tenant-current = %q", got)
		}
		if got := text(find(t, doc, "admin-role")); got != "tenant admin of a" {
			t.Errorf("admin-role = %q", got)
		}
		// Asking for tenant b does not switch to it.
		doc = b.page(t, "/console/tenants?tenant=b", http.StatusOK)
		if got := text(find(t, doc, "tenant-current")); got != "a" {
			t.Errorf("?tenant=b: tenant-current = %q", got)
		}
		if resp := b.post(t, "/console/tenant", url.Values{"csrf": {b.CSRF}, "tenant": {"b"}, "next": {"/console/tenants"}}, nil); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("switch: status %d", resp.StatusCode)
		}
		if doc := b.page(t, "/console/tenants", http.StatusOK); text(find(t, doc, "tenant-current")) != "a" || has(doc, "tenant-b") {
			t.Error("tenant admin of a switched to b")
		}
		// The API refuses the create; the page says so.
		doc = b.submit(t, "/console/tenants", url.Values{"name": {"sneaky"}}, http.StatusForbidden)
		if got := text(find(t, doc, "form-problems-message")); !strings.HasPrefix(got, "Not allowed") {
			t.Errorf("message = %q", got)
		}
	})

	t.Run("switcher", func(t *testing.T) {
		b := h.login(t, cluster)
		doc := b.page(t, "/console/tenants", http.StatusOK)
		if n := findAll(doc, "tenant-current-mark"); len(n) != 1 {
			t.Fatalf("%d current marks", len(n))
		}
		doc = b.submit(t, "/console/tenant", url.Values{"tenant": {"b"}, "next": {"/console/tenants?tenant=a"}}, http.StatusOK)
		row := find(t, doc, "tenant-b")
		if !has(row, "tenant-current-mark") {
			t.Error("b is not current after switching")
		}
		doc = b.page(t, "/console/tenants?tenant=a", http.StatusOK)
		if !has(find(t, doc, "tenant-a"), "tenant-current-mark") {
			t.Error("?tenant=a does not override the switcher")
		}
	})
}

func TestHeadersAndStatic(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	b := h.login(t, cluster)
	check := func(t *testing.T, resp *http.Response) {
		t.Helper()
		csp := resp.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("CSP %q lacks %q", csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") {
			t.Errorf("CSP allows inline: %q", csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Referrer-Policy") == "" {
			t.Errorf("headers: %v", resp.Header)
		}
	}
	for _, p := range []string{"/console/", "/console/tenants", "/console/login", "/console/nope", "/console/static/console.css"} {
		t.Run(p, func(t *testing.T) { check(t, b.get(t, p)) })
	}
	t.Run("404 in layout", func(t *testing.T) {
		b.page(t, "/console/nope", http.StatusNotFound)
		find(t, b.doc(t), "nav")
	})
	t.Run("no inline script or style", func(t *testing.T) {
		doc := b.page(t, "/console/tenants", http.StatusOK)
		if n := all(doc, func(n *htmlNode) bool {
			return n.Data == "script" && attr(n, "src") == "" || n.Data == "style" || hasAttr(n, "style") || hasOnAttr(n)
		}); len(n) > 0 {
			t.Errorf("%d inline scripts or styles", len(n))
		}
	})
	for path, ctype := range map[string]string{
		"/console/static/console.css": "text/css; charset=utf-8",
		"/console/static/console.js":  "text/javascript; charset=utf-8",
		"/console/static/favicon.svg": "image/svg+xml",
	} {
		t.Run(path, func(t *testing.T) {
			resp := h.browser(t).get(t, path)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != ctype {
				t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "max-age=") {
				t.Errorf("Cache-Control %q", cc)
			}
			etag := resp.Header.Get("ETag")
			req, _ := http.NewRequest(http.MethodGet, h.URL+path, nil)
			req.Header.Set("If-None-Match", etag)
			if resp := h.browser(t).do(t, req); etag == "" || resp.StatusCode != http.StatusNotModified {
				t.Errorf("revalidation: etag %q, status %d", etag, resp.StatusCode)
			}
		})
	}
	if resp := h.browser(t).get(t, "/console/static/missing.css"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("missing file: status %d", resp.StatusCode)
	}
	if resp := h.browser(t).get(t, "/"); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/console/" {
		t.Errorf("/: status %d, location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// TestInProcessStreaming exports usage through the console's in-process
// clients: a server stream, and a validation error on a stream.
func TestInProcessStreaming(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	tenant, err := h.Store.Q.GetTenantByName(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	for i, id := range []string{"call-1", "call-2", "call-3"} {
		if _, err := h.Store.Q.InsertCall(ctx, sqlc.InsertCallParams{
			CallID: id, TenantID: tenant.ID, EdgeID: "edge-1", Endpoint: "chat", Model: "gpt-x",
			RecordName: "gpt", MemberName: "eu1", Status: 200, Outcome: "answered",
			InputTokens: 10, OutputTokens: 20, CostNanos: int64(1000 * (i + 1)),
			StartedAt: pgtype.Timestamptz{Time: start.Add(time.Duration(i) * time.Minute), Valid: true},
		}); err != nil {
			t.Fatal(err)
		}
	}
	clients := console.NewClientsForTest(h.Handler, h.Tokens[tadmA])
	stream, err := clients.Usage.ExportUsage(ctx, connect.NewRequest(&adminv1.ExportUsageRequest{
		Tenant: "a", StartTime: timestamppb.New(start.Add(-time.Hour)), EndTime: timestamppb.New(start.Add(time.Hour)),
		Granularity: adminv1.UsageGranularity_USAGE_GRANULARITY_CALL,
	}))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for stream.Receive() {
		for _, r := range stream.Msg().GetRows() {
			ids = append(ids, r.GetCallId())
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids, ",") != "call-1,call-2,call-3" {
		t.Fatalf("rows %v", ids)
	}
	stream, err = clients.Usage.ExportUsage(ctx, connect.NewRequest(&adminv1.ExportUsageRequest{Tenant: "b",
		StartTime: timestamppb.New(start), EndTime: timestamppb.New(start.Add(time.Hour))}))
	if err == nil {
		for stream.Receive() {
		}
		err = stream.Err()
	}
	if code := connect.CodeOf(err); code != connect.CodePermissionDenied && code != connect.CodeNotFound {
		t.Fatalf("tenant admin of a exporting b: %v", err)
	}
}

func setCookie(t *testing.T, resp *http.Response, name string) *http.Cookie {
	t.Helper()
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no Set-Cookie %s in %v", name, resp.Header.Values("Set-Cookie"))
	return nil
}

func hasOnAttr(n *htmlNode) bool {
	for _, a := range n.Attr {
		if strings.HasPrefix(a.Key, "on") {
			return true
		}
	}
	return false
}

// TestFailedSignInsAreSlowed: after a few failed sign-ins from one address
// the login form answers 429 with Retry-After, without checking the token
// (the admin API's per-address limit sees the browser's address).
func TestFailedSignInsAreSlowed(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	b := h.browser(t)
	b.page(t, "/console/login", http.StatusOK)
	var codes []int
	for range 8 {
		resp := b.post(t, "/console/login", url.Values{"csrf": {b.CSRF}, "token": {"weir_adm_wrong"}}, nil)
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
	}
	if codes[0] != http.StatusUnauthorized || codes[len(codes)-1] != http.StatusTooManyRequests {
		t.Fatalf("statuses %v; want 401 first, then 429", codes)
	}
	if strings.Contains(string(b.Last), "weir_adm_wrong") {
		t.Error("the token was echoed back")
	}
	resp := b.post(t, "/console/login", url.Values{"csrf": {b.CSRF}, "token": {h.Tokens[cluster]}}, nil)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("valid token from the throttled address: %d, want 429", resp.StatusCode)
	}
}
