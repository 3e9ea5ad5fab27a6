// Package upauth applies a pool member's auth to an upstream request: an
// API key in a header, an AWS SigV4 signature, an OAuth2
// client-credentials bearer token, or a bearer token got with a Google
// service account's key (DESIGN.md §3: auth is separate from the wire
// format, which has already built the request).
//
// Every secret comes from a secrets.Store and is used only for a host it is
// bound to (R-SEC-1): the API key and the SigV4 access key for the request's
// host, the OAuth2 client secret for the token endpoint's host, a service
// account key for both the request's host and its token_uri's host. Token
// endpoints are reached through the SSRF guard under the member's record
// policy (R-SEC-2).
//
// Errors tell the routing core what to do with the member (R-END-3,
// R-END-4): they wrap ErrKeyUnavailable (pass the member over for
// routing.KeyUnavailablePassOver), wrap ErrKeyPassing (pass it over for this
// call only), or are the caller's ctx.Err() (the call ended while a key was
// read). Kind maps an error to its routing.FailureKind. No error, and nothing
// this package logs or prints, contains a secret value or a token.
package upauth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"weir.dev/edge/internal/netguard"
	"weir.dev/edge/internal/secrets"
	"weir.dev/routing"
)

// Sentinels for the routing core (R-END-3).
var (
	// ErrKeyUnavailable means the edge cannot sign for the member: a secret
	// not set, not bound to the host, malformed, or refused by the token
	// endpoint. The core tries such a member only after the others for
	// routing.KeyUnavailablePassOver; a call that ends on it answers 412
	// weir_key_unavailable.
	ErrKeyUnavailable = errors.New("key unavailable")
	// ErrKeyPassing means a passing key problem: the token endpoint did not
	// answer, timed out or failed (5xx, 408, 429). The member is passed over
	// for this call only.
	ErrKeyPassing = errors.New("key passing problem")
)

// DefaultAWSService is the SigV4 service name when the auth names none.
const DefaultAWSService = "bedrock"

// TokenFetchTimeout bounds one OAuth2 token request. The fetch runs apart
// from the calls waiting for it (each waits only as long as its own
// context allows), so that one cancelled call does not fail the others.
const TokenFetchTimeout = 30 * time.Second

// DefaultTokenLifetime is how long a token whose endpoint gave no
// expires_in is used before it is fetched again.
const DefaultTokenLifetime = 5 * time.Minute

// maxRefreshMargin is how long before its expiry a token is refreshed (at
// most half its lifetime, for short-lived tokens).
const maxRefreshMargin = time.Minute

// Signer applies members' auth to upstream requests. It is safe for
// concurrent use. It caches OAuth2 tokens; everything else is computed per
// request.
type Signer struct {
	store  atomic.Pointer[secrets.Store]
	client *http.Client
	clock  func() time.Time
	v4     *v4.Signer

	mu     sync.Mutex
	tokens map[tokenKey]*tokenEntry
}

// New returns a Signer reading secrets from store (nil: no secrets).
//
// httpClient is used for OAuth2 token endpoints only. Its transport must
// apply the SSRF guard (a *netguard.Transport): Sign puts the member's
// policy on the token request's context. nil means a client with a
// netguard.Transport of its own; a client without a Transport gets one too.
// The Signer uses a copy of the client that follows no redirect, since a
// redirect would carry the client secret to a host it is not bound to.
//
// clock is the time source for SigV4 signing times and token expiry; nil
// means time.Now.
func New(store *secrets.Store, httpClient *http.Client, clock func() time.Time) *Signer {
	var c http.Client
	if httpClient != nil {
		c = *httpClient
	} else {
		c.Timeout = TokenFetchTimeout
	}
	if c.Transport == nil {
		c.Transport = netguard.NewTransport(nil, nil)
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if clock == nil {
		clock = time.Now
	}
	s := &Signer{
		client: &c,
		clock:  clock,
		v4:     v4.NewSigner(),
		tokens: make(map[tokenKey]*tokenEntry),
	}
	s.store.Store(store)
	return s
}

// SetStore swaps in the secrets of a new config snapshot. Cached OAuth2
// tokens are kept: they stay valid until they expire, and a token whose
// client secret changed is not reused (the cache is keyed by a digest of the
// secret).
func (s *Signer) SetStore(store *secrets.Store) { s.store.Store(store) }

// CloseIdleConnections closes the token client's idle connections, e.g. when
// the Signer is dropped. Token requests under way finish on their own,
// bounded by TokenFetchTimeout; the Signer stays usable.
func (s *Signer) CloseIdleConnections() { s.client.CloseIdleConnections() }

// Sign applies member m's auth to req, which goes to req.URL and carries
// body (the exact bytes to be sent: SigV4 signs their hash). tenantID is the
// calling tenant; OAuth2 tokens are cached per tenant, member, token URL,
// client id, scopes and client secret.
//
// Secrets are looked up for the tenant owning m's record ("", the cluster,
// for a managed record) and bound hosts are matched against req.URL's host
// with its scheme's default port filled in. Sign sets headers only when it
// succeeds: on an error req is unchanged.
//
// Hazards: Sign must be the last change to req before it is sent — a SigV4
// signature covers the URL and every header present when signing, so a
// header added or a URL rewritten afterwards invalidates it. Sign does not
// remove the caller's own credentials (Authorization, x-api-key) from req;
// the proxy must strip them before. For AuthAPIKey the header named by the
// auth replaces any value it had.
func (s *Signer) Sign(ctx context.Context, req *http.Request, body []byte, m *routing.Member, tenantID string) error {
	if m == nil {
		return fmt.Errorf("upauth: no member: %w", ErrKeyUnavailable)
	}
	if req == nil || req.URL == nil {
		return fmt.Errorf("upauth: member %s: no request URL", m.ID)
	}
	if m.Auth.Kind == routing.AuthNone {
		return nil
	}
	if req.Header == nil {
		req.Header = make(http.Header)
	}
	owner, err := secretOwner(m, tenantID)
	if err != nil {
		return err
	}
	switch m.Auth.Kind {
	case routing.AuthAPIKey:
		return s.signAPIKey(req, m, owner)
	case routing.AuthSigV4:
		return s.signV4(ctx, req, body, m, owner)
	case routing.AuthOAuth2:
		return s.signOAuth2(ctx, req, m, owner, tenantID)
	case routing.AuthGoogleServiceAccount:
		return s.signServiceAccount(ctx, req, m, owner, tenantID)
	}
	return fmt.Errorf("upauth: member %s: unknown auth kind %d: %w", m.ID, m.Auth.Kind, ErrKeyUnavailable)
}

// Kind classifies an error of Sign for the routing core: KindKeyUnavailable
// for ErrKeyUnavailable, KindKeyPassing for ErrKeyPassing, KindCallEnded for
// a context's cancellation or deadline (R-END-4, R-FAIL-10), and
// KindKeyPassing for any other error (a problem of this call, not of the
// member's key). Kind(nil) is 0: no failure.
func Kind(err error) routing.FailureKind {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrKeyUnavailable):
		return routing.KindKeyUnavailable
	case errors.Is(err, ErrKeyPassing):
		return routing.KindKeyPassing
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return routing.KindCallEnded
	}
	return routing.KindKeyPassing
}

// MemberPolicy is the SSRF policy of m's record (R-SEC-2): trusted for
// managed and internal records, tenant otherwise (and when m has no record).
func MemberPolicy(m *routing.Member) netguard.Policy {
	if m == nil || m.Record == nil {
		return netguard.PolicyTenant
	}
	return netguard.PolicyFor(m.Record.Managed, m.Record.Internal)
}

// secretOwner is the tenant whose secrets m signs with: the cluster ("") for
// a managed record, else the record's tenant, which must be the caller's.
func secretOwner(m *routing.Member, tenantID string) (string, error) {
	switch {
	case m.Record == nil:
		return tenantID, nil
	case m.Record.Managed:
		return "", nil
	case m.Record.TenantID != tenantID:
		return "", fmt.Errorf("upauth: member %s: record of tenant %q used by tenant %q: %w", m.ID, m.Record.TenantID, tenantID, ErrKeyUnavailable)
	}
	return tenantID, nil
}

// bindingHost is u's host as secrets are bound: with the scheme's default
// port when u names none, so that a binding "name:443" matches https://name/.
func bindingHost(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	var port string
	switch strings.ToLower(u.Scheme) {
	case "https":
		port = "443"
	case "http":
		port = "80"
	default:
		return u.Host
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// secret reads a secret bound to host, turning the store's errors into
// ErrKeyUnavailable.
func (s *Signer) secret(m *routing.Member, owner, what, name, host string) ([]byte, error) {
	if name == "" {
		return nil, fmt.Errorf("upauth: member %s: no %s: %w", m.ID, what, ErrKeyUnavailable)
	}
	v, err := s.store.Load().Get(owner, name, host)
	if err != nil {
		return nil, fmt.Errorf("upauth: member %s: %s: %w: %w", m.ID, what, ErrKeyUnavailable, err)
	}
	return v, nil
}

// headerValue trims the white space a secret read from stdin may carry and
// refuses control characters, which cannot go in a header (and would split
// it). The error does not include the value.
func headerValue(m *routing.Member, what string, v []byte) (string, error) {
	return prefixedHeaderValue(m, what, "", v)
}

// prefixedHeaderValue is prefix followed by headerValue's value, built in
// one allocation.
func prefixedHeaderValue(m *routing.Member, what, prefix string, v []byte) (string, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "", fmt.Errorf("upauth: member %s: %s is empty: %w", m.ID, what, ErrKeyUnavailable)
	}
	for _, c := range v {
		if c < ' ' && c != '\t' || c == 0x7f {
			return "", fmt.Errorf("upauth: member %s: %s has a control character: %w", m.ID, what, ErrKeyUnavailable)
		}
	}
	var sb strings.Builder
	sb.Grow(len(prefix) + len(v))
	sb.WriteString(prefix)
	sb.Write(v)
	return sb.String(), nil
}

// defaultKeyHeader is the API-key header of a wire format when the auth
// names none (the compiler normally fills it in).
func defaultKeyHeader(m *routing.Member) string {
	switch m.Format() {
	case routing.WireAnthropic:
		return "x-api-key"
	case routing.WireGemini:
		return "x-goog-api-key"
	}
	return "authorization"
}

func (s *Signer) signAPIKey(req *http.Request, m *routing.Member, owner string) error {
	raw, err := s.secret(m, owner, "key secret", m.KeySecret, bindingHost(req.URL))
	if err != nil {
		return err
	}
	header := m.Auth.Header
	if header == "" {
		header = defaultKeyHeader(m)
	}
	prefix := ""
	if strings.EqualFold(header, "authorization") {
		prefix = "Bearer "
	}
	key, err := prefixedHeaderValue(m, "key secret", prefix, raw)
	clear(raw)
	if err != nil {
		return err
	}
	req.Header[canonicalHeaderKey(header)] = []string{key} // Header.Set
	return nil
}

// canonicalHeaderKey is textproto.CanonicalMIMEHeaderKey(h), without its
// allocation for the API-key headers the wire formats name in lower case.
func canonicalHeaderKey(h string) string {
	switch h {
	case "authorization":
		return "Authorization"
	case "x-api-key":
		return "X-Api-Key"
	case "api-key":
		return "Api-Key"
	case "x-goog-api-key":
		return "X-Goog-Api-Key"
	}
	return textproto.CanonicalMIMEHeaderKey(h)
}

func (s *Signer) signV4(ctx context.Context, req *http.Request, body []byte, m *routing.Member, owner string) error {
	if m.Auth.AWSRegion == "" {
		return fmt.Errorf("upauth: member %s: sigv4 auth without a signing region: %w", m.ID, ErrKeyUnavailable)
	}
	if req.ContentLength > 0 && req.ContentLength != int64(len(body)) {
		return fmt.Errorf("upauth: member %s: request content length %d differs from the %d body bytes to sign", m.ID, req.ContentLength, len(body))
	}
	raw, err := s.secret(m, owner, "access key secret", m.Auth.AccessKeySecret, bindingHost(req.URL))
	if err != nil {
		return err
	}
	creds, err := secrets.ParseAWSCredentials(raw)
	clear(raw)
	if err != nil {
		return fmt.Errorf("upauth: member %s: access key secret %q: %w: %w", m.ID, m.Auth.AccessKeySecret, ErrKeyUnavailable, err)
	}
	service := m.Auth.AWSService
	if service == "" {
		service = DefaultAWSService
	}
	// Payload hash: hex SHA-256 of the body. Like the SDK for every service
	// but S3, it is signed but not sent as X-Amz-Content-Sha256: Bedrock
	// does not read it.
	sum := sha256.Sum256(body)

	// Sign a copy so that req is untouched on failure; the signer rewrites
	// headers, the query encoding and Host.
	signed := req.Clone(ctx)
	signed.Header.Del("Authorization")
	signed.Header.Del("X-Amz-Security-Token")
	signed.Header.Del("X-Amz-Date")
	err = s.v4.SignHTTP(ctx, aws.Credentials{
		AccessKeyID:     creds.AccessKeyID,
		SecretAccessKey: creds.SecretAccessKey,
		SessionToken:    creds.SessionToken,
		Source:          "weir",
	}, signed, hex.EncodeToString(sum[:]), service, m.Auth.AWSRegion, s.clock())
	if err != nil {
		return fmt.Errorf("upauth: member %s: sigv4: %w: %w", m.ID, ErrKeyUnavailable, err)
	}
	// The signer sets exactly these headers, Host and the query encoding.
	for _, h := range []string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token"} {
		if v := signed.Header.Values(h); len(v) > 0 {
			req.Header[h] = v
		} else {
			req.Header.Del(h)
		}
	}
	req.Host = signed.Host
	req.URL.RawQuery = signed.URL.RawQuery
	return nil
}
