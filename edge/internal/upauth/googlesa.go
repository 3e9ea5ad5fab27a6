package upauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"golang.org/x/oauth2/jwt"

	"weir.dev/edge/internal/netguard"
	"weir.dev/routing"
)

// GoogleCloudPlatformScope is the scope a service-account token is asked
// for when the member's auth names none: Vertex AI's generateContent and
// streamGenerateContent accept it.
const GoogleCloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"

// ServiceAccountRefreshMargin is how long before its expiry a
// service-account token is refreshed (at most half its lifetime). Google's
// tokens live an hour; refreshing five minutes ahead keeps a token that is
// about to lapse off calls that may run for minutes.
const ServiceAccountRefreshMargin = 5 * time.Minute

// signServiceAccount signs for a google-service-account member (Vertex AI,
// DESIGN.md §3): the member's key secret holds a service account's JSON key;
// an access token is got from the key's token_uri by the signed-JWT grant
// (RFC 7523, urn:ietf:params:oauth:grant-type:jwt-bearer) of package
// golang.org/x/oauth2/google, cached, and sent as "Authorization: Bearer
// <token>".
//
// R-SEC-1: the key secret must be bound to the request's host (where the
// token goes) and to the token_uri's host (where the signed assertion
// goes); the token_uri must also pass the SSRF check under the member's
// policy (R-SEC-2). Both are checked before any token request, so a key
// whose token_uri names a host it is not bound to never signs anything.
//
// Tokens are cached per calling tenant, key secret name, key digest,
// token_uri and scopes: the members that sign with one key share its
// token, and a rotated key gets a token of its own. No error carries the
// key or the token: the library's errors about the key are replaced by
// fixed texts.
func (s *Signer) signServiceAccount(ctx context.Context, req *http.Request, m *routing.Member, owner, tenantID string) error {
	raw, err := s.secret(m, owner, "key secret", m.KeySecret, bindingHost(req.URL))
	if err != nil {
		return err
	}
	scopes := m.Auth.Scopes
	if len(scopes) == 0 {
		scopes = []string{GoogleCloudPlatformScope}
	}
	cfg, err := google.JWTConfigFromJSON(raw, scopes...)
	digest := sha256.Sum256(raw)
	clear(raw)
	if err != nil || cfg.Email == "" || len(cfg.PrivateKey) == 0 {
		// The library's error may quote the JSON; none of it is kept.
		return fmt.Errorf("upauth: member %s: key secret %q is not a Google service account JSON key: %w", m.ID, m.KeySecret, ErrKeyUnavailable)
	}
	policy := MemberPolicy(m)
	if err := netguard.CheckURL(cfg.TokenURL, policy); err != nil {
		return fmt.Errorf("upauth: member %s: key secret %q: token_uri: %w: %w", m.ID, m.KeySecret, ErrKeyUnavailable, err)
	}
	tu, err := url.Parse(cfg.TokenURL)
	if err != nil { // CheckURL parsed it already
		return fmt.Errorf("upauth: member %s: key secret %q: token_uri: %w", m.ID, m.KeySecret, ErrKeyUnavailable)
	}
	// The signed assertion goes to the token endpoint: the key must be
	// bound to that host too (R-SEC-1).
	check, err := s.secret(m, owner, "key secret (for its token_uri)", m.KeySecret, bindingHost(tu))
	if err != nil {
		return err
	}
	clear(check)
	key := tokenKey{
		tenantID:  tenantID,
		keySecret: m.KeySecret,
		tokenURL:  cfg.TokenURL,
		clientID:  cfg.Email,
		scopes:    strings.Join(scopes, " "),
		secret:    digest,
	}
	tok, err := s.token(ctx, key, policy, tu.Host, func() *tokenEntry {
		return &tokenEntry{margin: ServiceAccountRefreshMargin, src: &serviceAccountFetcher{cfg: cfg}}
	})
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return err // R-END-4: the caller's own cancellation, as is
		}
		return fmt.Errorf("upauth: member %s: %w", m.ID, err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	return nil
}

// serviceAccountFetcher gets one token by the JWT grant of cfg.
type serviceAccountFetcher struct {
	cfg *jwt.Config
}

// Token implements tokenFetcher. The library posts the assertion without
// a request context, so the client it is given sends every request under
// ctx (its SSRF policy and deadline); a transport failure is returned as a
// *url.Error for classifyFetch, and a failure before any request (the key
// does not parse or cannot sign) as a fixed text wrapping
// ErrKeyUnavailable.
func (f *serviceAccountFetcher) Token(ctx context.Context) (*oauth2.Token, error) {
	c := http.Client{}
	if base, ok := ctx.Value(oauth2.HTTPClient).(*http.Client); ok && base != nil {
		c = *base
	}
	bt := &boundTransport{ctx: ctx, base: c.Transport}
	if bt.base == nil {
		bt.base = http.DefaultTransport
	}
	c.Transport = bt
	tok, err := f.cfg.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, &c)).Token()
	if err == nil {
		return tok, nil
	}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return nil, re
	}
	sent, terr := bt.result()
	switch {
	case terr != nil:
		return nil, &url.Error{Op: "Post", URL: f.cfg.TokenURL, Err: terr}
	case !sent:
		return nil, fmt.Errorf("the service account key cannot sign a token request: %w", ErrKeyUnavailable)
	}
	return nil, errors.New("token answer unreadable")
}

// boundTransport sends each request under ctx and keeps the first
// transport error.
type boundTransport struct {
	ctx  context.Context
	base http.RoundTripper

	mu   sync.Mutex
	sent bool
	err  error
}

func (t *boundTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.mu.Lock()
	t.sent = true
	t.mu.Unlock()
	resp, err := t.base.RoundTrip(r.WithContext(t.ctx))
	if err != nil {
		t.mu.Lock()
		if t.err == nil {
			t.err = err
		}
		t.mu.Unlock()
	}
	return resp, err
}

func (t *boundTransport) result() (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sent, t.err
}
