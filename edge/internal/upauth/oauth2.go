package upauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"weir.dev/edge/internal/netguard"
	"weir.dev/routing"
)

// tokenKey identifies a cached token. The client secret (or service
// account key) enters as a digest only, so that a rotated secret gets a
// token of its own. OAuth2 tokens are per member (memberID);
// service-account tokens are per key secret (keySecret), shared by the
// members that sign with it.
type tokenKey struct {
	tenantID, memberID, keySecret, tokenURL, clientID, scopes string
	secret                                                    [sha256.Size]byte
}

// tokenFetcher gets one new token; ctx carries the token client
// (oauth2.HTTPClient), the SSRF policy and the fetch's deadline.
// *clientcredentials.Config is one (it keeps the endpoint's auth style once
// probed); serviceAccountFetcher is another.
type tokenFetcher interface {
	Token(ctx context.Context) (*oauth2.Token, error)
}

// tokenEntry is one cached token and the fetch under way for it, if any.
// Its fields are guarded by mu; src is used by one fetch at a time.
type tokenEntry struct {
	src tokenFetcher
	// margin is how long before its expiry the token is refreshed (at most
	// half its lifetime).
	margin time.Duration

	mu        sync.Mutex
	token     string
	refreshAt time.Time // by the Signer's clock
	expiry    time.Time
	flight    *flight
}

// flight is one token request; token and err are set before done closes.
type flight struct {
	done  chan struct{}
	token string
	err   error
}

func (s *Signer) signOAuth2(ctx context.Context, req *http.Request, m *routing.Member, owner, tenantID string) error {
	a := m.Auth
	if a.TokenURL == "" || a.ClientID == "" {
		return fmt.Errorf("upauth: member %s: oauth2 auth without a token URL and a client id: %w", m.ID, ErrKeyUnavailable)
	}
	policy := MemberPolicy(m)
	if err := netguard.CheckURL(a.TokenURL, policy); err != nil {
		return fmt.Errorf("upauth: member %s: token URL: %w: %w", m.ID, ErrKeyUnavailable, err)
	}
	tu, err := url.Parse(a.TokenURL)
	if err != nil { // CheckURL parsed it already
		return fmt.Errorf("upauth: member %s: token URL: %w", m.ID, ErrKeyUnavailable)
	}
	// The client secret goes to the token endpoint, so that is the host it
	// must be bound to (R-SEC-1), not the member's.
	raw, err := s.secret(m, owner, "client secret", a.ClientSecret, bindingHost(tu))
	if err != nil {
		return err
	}
	clientSecret, err := headerValue(m, "client secret", raw)
	clear(raw)
	if err != nil {
		return err
	}
	key := tokenKey{
		tenantID: tenantID,
		memberID: m.ID,
		tokenURL: a.TokenURL,
		clientID: a.ClientID,
		scopes:   strings.Join(a.Scopes, " "),
		secret:   sha256.Sum256([]byte(clientSecret)),
	}
	tok, err := s.token(ctx, key, policy, tu.Host, func() *tokenEntry {
		return &tokenEntry{margin: maxRefreshMargin, src: &clientcredentials.Config{
			ClientID:     a.ClientID,
			ClientSecret: clientSecret,
			TokenURL:     a.TokenURL,
			Scopes:       append([]string(nil), a.Scopes...),
		}}
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

// Forget drops the tokens cached for member m of tenant tenantID, e.g. after
// the upstream refused one with 401: the next Sign fetches a new one. For a
// google-service-account member that is the token of its key secret, which
// the other members signing with that key share.
func (s *Signer) Forget(tenantID string, m *routing.Member) {
	if m == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.tokens {
		mine := k.memberID != "" && k.memberID == m.ID ||
			k.keySecret != "" && m.Auth.Kind == routing.AuthGoogleServiceAccount && k.keySecret == m.KeySecret
		if k.tenantID == tenantID && mine {
			delete(s.tokens, k)
		}
	}
}

// token returns a cached token that is not due for refresh, or waits for a
// fetch (starting one unless one is under way: one fetch at a time per key).
// The fetch runs detached from ctx, bounded by TokenFetchTimeout; if ctx ends
// first, token returns ctx.Err() and the fetch goes on to fill the cache. A
// failed refresh of a token not yet expired returns that token.
func (s *Signer) token(ctx context.Context, key tokenKey, p netguard.Policy, host string, newEntry func() *tokenEntry) (string, error) {
	e := s.entry(key, newEntry)
	e.mu.Lock()
	if e.token != "" && s.clock().Before(e.refreshAt) {
		tok := e.token
		e.mu.Unlock()
		return tok, nil
	}
	if err := ctx.Err(); err != nil {
		e.mu.Unlock()
		return "", err
	}
	f := e.flight
	if f == nil {
		f = &flight{done: make(chan struct{})}
		e.flight = f
		go s.fetch(e, f, p, host)
	}
	e.mu.Unlock()

	select {
	case <-f.done:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	if f.err == nil {
		return f.token, nil
	}
	e.mu.Lock()
	tok, expiry := e.token, e.expiry
	e.mu.Unlock()
	if tok != "" && s.clock().Before(expiry) {
		return tok, nil
	}
	return "", f.err
}

// entry returns the cache entry of key, creating it. Creating one first
// drops expired idle entries once the cache has grown, so that members and
// secrets gone from the config do not pile up.
func (s *Signer) entry(key tokenKey, newEntry func() *tokenEntry) *tokenEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.tokens[key]; ok {
		return e
	}
	if len(s.tokens) >= 256 {
		now := s.clock()
		for k, old := range s.tokens {
			old.mu.Lock()
			idle := old.flight == nil && !now.Before(old.expiry)
			old.mu.Unlock()
			if idle {
				delete(s.tokens, k)
			}
		}
	}
	e := newEntry()
	s.tokens[key] = e
	return e
}

// fetch runs one token request and publishes its result to the entry and
// to the flight's waiters.
func (s *Signer) fetch(e *tokenEntry, f *flight, p netguard.Policy, host string) {
	ctx, cancel := context.WithTimeout(context.Background(), TokenFetchTimeout)
	defer cancel()
	ctx = netguard.WithPolicy(ctx, p)
	ctx = context.WithValue(ctx, oauth2.HTTPClient, s.client)

	start := s.clock()
	tok, err := e.src.Token(ctx)
	if err != nil {
		f.err = classifyFetch(err, host)
	} else if v, verr := bearerValue(tok.AccessToken); verr != nil {
		f.err = fmt.Errorf("token endpoint %s answered a token that %s: %w", host, verr, ErrKeyUnavailable)
	} else {
		f.token = v
	}

	e.mu.Lock()
	if f.err == nil {
		life := lifetime(tok)
		margin := min(e.margin, life/2)
		e.token = f.token
		e.expiry = start.Add(life)
		e.refreshAt = e.expiry.Add(-margin)
	}
	e.flight = nil
	e.mu.Unlock()
	close(f.done)
}

// lifetime is the token's expires_in, or DefaultTokenLifetime when the
// endpoint gave none. Token.Expiry is not used: the oauth2 package computes
// it from the wall clock, not from the Signer's clock.
func lifetime(tok *oauth2.Token) time.Duration {
	var secs float64
	switch v := tok.Extra("expires_in").(type) {
	case float64:
		secs = v
	case int64:
		secs = float64(v)
	case string:
		secs, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
	}
	if secs <= 0 || secs > float64(365*24*3600) {
		return DefaultTokenLifetime
	}
	return time.Duration(secs * float64(time.Second))
}

// bearerValue checks that a token can go in a header as is.
func bearerValue(tok string) (string, error) {
	if tok == "" {
		return "", errors.New("is empty")
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c <= ' ' || c == 0x7f {
			return "", errors.New("has white space or a control character")
		}
	}
	return tok, nil
}

// classifyFetch turns a token request's failure into ErrKeyUnavailable (the
// endpoint refuses the credential, or cannot be used) or ErrKeyPassing (it
// did not answer or failed for now). The oauth2 package's own error texts
// quote the endpoint's answer, so they are not wrapped: only the status and
// an RFC 6749 error code are kept.
func classifyFetch(err error, host string) error {
	var re *oauth2.RetrieveError
	switch {
	case errors.As(err, &re):
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		what := fmt.Sprintf("token endpoint %s answered %d", host, status)
		code := re.ErrorCode
		if code == "" {
			code = bodyErrorCode(re.Body) // x/oauth2/jwt leaves ErrorCode empty
		}
		if code := oauthErrorCode(code); code != "" {
			what += " " + code
		}
		if status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500 {
			return fmt.Errorf("%s: %w", what, ErrKeyPassing)
		}
		// 400, 401, 403: the credential is refused; any other answer (3xx,
		// 404, an error in a 200) means the URL or the client is wrong.
		return fmt.Errorf("%s: %w", what, ErrKeyUnavailable)
	case errors.Is(err, netguard.ErrRefused), errors.Is(err, netguard.ErrBadURL):
		return fmt.Errorf("token endpoint %s: %w: %w", host, ErrKeyUnavailable, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("token endpoint %s: no answer within %s: %w", host, TokenFetchTimeout, ErrKeyPassing)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		// Transport failure: nothing of the answer is in it.
		return fmt.Errorf("token endpoint %s unreachable: %v: %w", host, ue.Err, ErrKeyPassing)
	}
	return fmt.Errorf("token endpoint %s answered without a usable token: %w", host, ErrKeyUnavailable)
}

// bodyErrorCode is the "error" member of an RFC 6749 error body, "" when
// the body is not one (at most 4 KiB of it is read).
func bodyErrorCode(body []byte) string {
	if len(body) > 4096 {
		return ""
	}
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	return e.Error
}

// oauthErrorCode keeps an RFC 6749 error code such as "invalid_client" and
// drops anything else the endpoint put there.
func oauthErrorCode(code string) string {
	if len(code) == 0 || len(code) > 64 {
		return ""
	}
	for i := 0; i < len(code); i++ {
		if c := code[i]; !('a' <= c && c <= 'z' || c == '_') {
			return ""
		}
	}
	return code
}
