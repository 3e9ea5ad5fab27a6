package console_test

// The console's test harness: a real control plane (admin API and console,
// server.Handler) on a fresh Postgres database, served over loopback, with
// tenants "a" and "b" and one admin per role; and a browser-like client
// (cookie jar, CSRF token picked up from the pages, Origin set like a
// browser) whose pages are parsed with golang.org/x/net/html and searched
// by data-testid. Page tests reuse it:
//
//	h := newHarness(t)
//	b := h.login(t, tadmA)
//	doc := b.page(t, "/console/keys", http.StatusOK)
//	find(t, doc, "keys-table")
//	doc = b.submit(t, "/console/keys", url.Values{"name": {"k1"}}, http.StatusOK)

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/net/html"

	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/secretbox"
	"weir.dev/controlplane/internal/server"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/pgtest"
	"weir.dev/listen/logflags/logtest"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/proto/gen/weir/admin/v1/adminv1connect"
)

// Admins of the harness (names double as admin names).
const (
	cluster = "root"
	tadmA   = "tadm-a"
	padmA   = "padm-a"
	costA   = "cost-a"
	tadmB   = "tadm-b"
)

// masterKey is the harness's master key.
var masterKey = bytes.Repeat([]byte{7}, secretbox.KeySize)

// harness is a control plane with the console, on its own database.
type harness struct {
	URL   string
	Store *store.Store
	// Tokens are the admin tokens by admin name.
	Tokens map[string]string
	// Logs is everything the control plane logged.
	Logs *logtest.Buffer
	// Clock is the console's and API's clock; tests may move it.
	Clock *clock
	// Handler is the control plane's whole handler (admin API and
	// console), for in-process use.
	Handler http.Handler
	// Stop closes the console's Stopping channel, as a shutting-down
	// server does.
	Stop func()

	transport http.RoundTripper
}

// newHarness starts a control plane on a fresh database with tenants "a"
// and "b" and the admins cluster, tadmA, padmA, costA and tadmB, served over
// plain HTTP on loopback.
func newHarness(t *testing.T) *harness { t.Helper(); return startHarness(t, false) }

// newHarnessTLS is newHarness served over HTTPS (a test certificate the
// harness's clients trust).
func newHarnessTLS(t *testing.T) *harness { t.Helper(); return startHarness(t, true) }

func startHarness(t *testing.T, useTLS bool) *harness {
	t.Helper()
	ctx := context.Background()
	st := store.New(pgtest.New(t))
	box, err := secretbox.NewBox(masterKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	logs := &logtest.Buffer{}
	clk := &clock{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	stopping := make(chan struct{})
	handler := server.Handler(server.Deps{Store: st, Box: box, Log: log, MasterKey: masterKey, Now: clk.Now, Stopping: stopping})
	srv := httptest.NewUnstartedServer(handler)
	if useTLS {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	h := &harness{URL: srv.URL, Store: st, Tokens: map[string]string{}, Logs: logs, Clock: clk, Handler: handler, transport: srv.Client().Transport,
		Stop: sync.OnceFunc(func() { close(stopping) })}
	root, err := auth.Bootstrap(ctx, st, cluster, false, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h.Tokens[cluster] = root
	api := h.API(cluster)
	for _, name := range []string{"a", "b"} {
		if _, err := api.Tenants.CreateTenant(ctx, connect.NewRequest(&adminv1.CreateTenantRequest{Name: name})); err != nil {
			t.Fatal(err)
		}
	}
	for name, b := range map[string]*adminv1.RoleBinding{
		tadmA: {Role: adminv1.Role_ROLE_TENANT_ADMIN, Tenant: "a"},
		padmA: {Role: adminv1.Role_ROLE_PROVIDER_ADMIN, Tenant: "a"},
		costA: {Role: adminv1.Role_ROLE_COST_OWNER, Tenant: "a"},
		tadmB: {Role: adminv1.Role_ROLE_TENANT_ADMIN, Tenant: "b"},
	} {
		if _, err := api.Admins.CreateAdmin(ctx, connect.NewRequest(&adminv1.CreateAdminRequest{Name: name, Roles: []*adminv1.RoleBinding{b}})); err != nil {
			t.Fatalf("create admin %s: %v", name, err)
		}
		tok, err := api.Admins.CreateAdminToken(ctx, connect.NewRequest(&adminv1.CreateAdminTokenRequest{Admin: name}))
		if err != nil {
			t.Fatalf("token of %s: %v", name, err)
		}
		h.Tokens[name] = tok.Msg.GetSecret()
	}
	return h
}

// apiClients are the admin API's clients over the network, for a test's
// setup and checks (the console itself never uses these).
type apiClients struct {
	Tenants   adminv1connect.TenantServiceClient
	Keys      adminv1connect.ApiKeyServiceClient
	Admins    adminv1connect.AdminServiceClient
	Secrets   adminv1connect.SecretServiceClient
	Budgets   adminv1connect.BudgetServiceClient
	Usage     adminv1connect.UsageServiceClient
	Calls     adminv1connect.CallServiceClient
	Edges     adminv1connect.EdgeServiceClient
	Doctor    adminv1connect.DoctorServiceClient
	Providers adminv1connect.ProviderServiceClient
	Pools     adminv1connect.PoolServiceClient
	Prices    adminv1connect.PriceServiceClient
}

// API returns API clients authenticated as admin (a harness admin name).
func (h *harness) API(admin string) *apiClients {
	hc := &http.Client{Transport: bearerRT{token: h.Tokens[admin], rt: h.transport}, Timeout: time.Minute}
	return &apiClients{
		Tenants:   adminv1connect.NewTenantServiceClient(hc, h.URL),
		Keys:      adminv1connect.NewApiKeyServiceClient(hc, h.URL),
		Admins:    adminv1connect.NewAdminServiceClient(hc, h.URL),
		Secrets:   adminv1connect.NewSecretServiceClient(hc, h.URL),
		Budgets:   adminv1connect.NewBudgetServiceClient(hc, h.URL),
		Usage:     adminv1connect.NewUsageServiceClient(hc, h.URL),
		Calls:     adminv1connect.NewCallServiceClient(hc, h.URL),
		Edges:     adminv1connect.NewEdgeServiceClient(hc, h.URL),
		Doctor:    adminv1connect.NewDoctorServiceClient(hc, h.URL),
		Providers: adminv1connect.NewProviderServiceClient(hc, h.URL),
		Pools:     adminv1connect.NewPoolServiceClient(hc, h.URL),
		Prices:    adminv1connect.NewPriceServiceClient(hc, h.URL),
	}
}

type bearerRT struct {
	token string
	rt    http.RoundTripper
}

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

// browser is a browser-like client of the console: a cookie jar, redirects
// not followed unless asked, an Origin header on POSTs, and the CSRF token
// of the last page that had one.
type browser struct {
	h    *harness
	c    *http.Client
	CSRF string
	// Last is the body of the last response.
	Last []byte
}

// browser returns a client without a session.
func (h *harness) browser(t *testing.T) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{h: h, c: &http.Client{
		Jar:           jar,
		Transport:     h.transport,
		Timeout:       time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// login signs admin in through the login form and returns its browser, on
// the console's home page (its CSRF token picked up).
func (h *harness) login(t *testing.T, admin string) *browser {
	t.Helper()
	b := h.browser(t)
	b.page(t, "/console/login", http.StatusOK)
	resp := b.post(t, "/console/login", url.Values{"csrf": {b.CSRF}, "token": {h.Tokens[admin]}}, nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login as %s: status %d, want 303\n%s", admin, resp.StatusCode, b.Last)
	}
	b.page(t, "/console/", http.StatusOK)
	return b
}

// do sends req and reads the whole response (kept in Last); the CSRF token
// of an HTML page is remembered.
func (b *browser) do(t *testing.T, req *http.Request) *http.Response {
	t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b.Last, err = io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		if doc, err := html.Parse(bytes.NewReader(b.Last)); err == nil {
			if tok := csrfOf(doc); tok != "" {
				b.CSRF = tok
			}
		}
	}
	return resp
}

// get sends a GET without following redirects.
func (b *browser) get(t *testing.T, path string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.h.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b.do(t, req)
}

// post sends a form as it is (no CSRF token added: tests of the checks use
// it directly), with the console's Origin unless header overrides it, and
// does not follow redirects.
func (b *browser) post(t *testing.T, path string, values url.Values, header http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.h.URL+path, strings.NewReader(values.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.h.URL)
	for k, vs := range header {
		req.Header[k] = vs
	}
	return b.do(t, req)
}

// follow follows a redirect answer with GETs (at most 10) and returns the
// final response.
func (b *browser) follow(t *testing.T, resp *http.Response) *http.Response {
	t.Helper()
	for i := 0; i < 10 && resp.StatusCode >= 300 && resp.StatusCode < 400; i++ {
		loc, err := resp.Location()
		if err != nil {
			t.Fatalf("redirect without location: %v", err)
		}
		resp = b.get(t, loc.RequestURI())
	}
	return resp
}

// page GETs path, follows redirects, checks the final status and returns
// the parsed page.
func (b *browser) page(t *testing.T, path string, want int) *html.Node {
	t.Helper()
	resp := b.follow(t, b.get(t, path))
	if resp.StatusCode != want {
		t.Fatalf("GET %s: status %d, want %d\n%s", path, resp.StatusCode, want, b.Last)
	}
	return b.doc(t)
}

// submit POSTs a form with the session's CSRF token (as a browser would
// from the console's page), follows the redirect (post/redirect/get),
// checks the final status and returns the parsed page.
func (b *browser) submit(t *testing.T, path string, values url.Values, want int) *html.Node {
	t.Helper()
	if b.CSRF == "" {
		t.Fatal("no CSRF token yet: load a page first")
	}
	v := url.Values{}
	for k, vs := range values {
		v[k] = vs
	}
	v.Set("csrf", b.CSRF)
	resp := b.follow(t, b.post(t, path, v, nil))
	if resp.StatusCode != want {
		t.Fatalf("POST %s: status %d, want %d\n%s", path, resp.StatusCode, want, b.Last)
	}
	return b.doc(t)
}

// doc parses the last response.
func (b *browser) doc(t *testing.T) *html.Node {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(b.Last))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// cookie returns the jar's cookie name for the console ("" when none).
func (b *browser) cookie(name string) string {
	u, _ := url.Parse(b.h.URL + "/console/")
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// csrfOf returns the page's CSRF token: its csrf-token meta, else the first
// hidden csrf input.
func csrfOf(doc *html.Node) string {
	if m := first(doc, func(n *html.Node) bool { return n.Data == "meta" && attr(n, "name") == "csrf-token" }); m != nil {
		return attr(m, "content")
	}
	if in := first(doc, func(n *html.Node) bool { return n.Data == "input" && attr(n, "name") == "csrf" }); in != nil {
		return attr(in, "value")
	}
	return ""
}

// htmlNode is a parsed HTML node.
type htmlNode = html.Node

// find returns the one element with data-testid id, failing the test when
// there is none or more than one.
func find(t *testing.T, doc *html.Node, id string) *html.Node {
	t.Helper()
	all := findAll(doc, id)
	if len(all) != 1 {
		t.Fatalf("%d elements with data-testid %q, want 1", len(all), id)
	}
	return all[0]
}

// findAll returns every element with data-testid id, in document order.
func findAll(doc *html.Node, id string) []*html.Node {
	return all(doc, func(n *html.Node) bool { return attr(n, "data-testid") == id })
}

// has reports whether an element with data-testid id exists.
func has(doc *html.Node, id string) bool { return len(findAll(doc, id)) > 0 }

// text returns the element's text with white space collapsed.
func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// attr returns an attribute's value ("" when absent).
func attr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}

// hasAttr reports whether the attribute is present.
func hasAttr(n *html.Node, name string) bool {
	for _, a := range n.Attr {
		if a.Key == name {
			return true
		}
	}
	return false
}

// byID returns the element with id ("" id or none: nil).
func byID(doc *html.Node, id string) *html.Node {
	return first(doc, func(n *html.Node) bool { return id != "" && attr(n, "id") == id })
}

func all(n *html.Node, ok func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && ok(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func first(n *html.Node, ok func(*html.Node) bool) *html.Node {
	if l := all(n, ok); len(l) > 0 {
		return l[0]
	}
	return nil
}

// clock is a settable clock (zero offset: the real time).
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

// Now is the real time plus the offset.
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

// Advance moves the clock forward.
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}
