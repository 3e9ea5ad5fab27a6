package fakeprovider

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Defaults of the Vertex service account and its tokens.
const (
	DefaultGCPProject    = "fake-project"
	DefaultTokenLifetime = time.Hour
	// JWTBearerGrant is the grant_type of the OAuth2 JWT-bearer grant
	// (RFC 7523) the token endpoint implements.
	JWTBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	// maxLiveTokens bounds the access tokens kept; the oldest-expiring
	// go first when more are issued.
	maxLiveTokens = 4096
	// maxJWTLifetime is the longest exp - iat Google's token endpoint
	// takes.
	maxJWTLifetime = time.Hour
)

// gcpAuth is the Vertex identity service of a Server: one service account
// (its RSA key made on first use) and the access tokens issued to it.
type gcpAuth struct {
	project string

	keyOnce sync.Once
	key     *rsa.PrivateKey
	keyID   string
	keyErr  error

	mu        sync.Mutex
	tokens    map[string]time.Time // access token → expiry (server clock)
	tokenURIs map[string]bool      // token_uri values handed out in key files
	requests  int
}

// serviceAccount makes the service account's key on first use.
func (g *gcpAuth) serviceAccount() (*rsa.PrivateKey, string, error) {
	g.keyOnce.Do(func() {
		g.key, g.keyErr = rsa.GenerateKey(rand.Reader, 2048)
		var b [20]byte
		_, _ = rand.Read(b[:])
		g.keyID = hex.EncodeToString(b[:])
	})
	return g.key, g.keyID, g.keyErr
}

// clientEmail is the service account's address.
func (g *gcpAuth) clientEmail() string {
	return "fakeprovider@" + g.project + ".iam.gserviceaccount.com"
}

// ServiceAccountKey returns the JSON key file of the Vertex service account
// (type service_account, project_id, private_key_id, private_key as PKCS#8
// PEM, client_email, token_uri …), the file golang.org/x/oauth2/google's
// JWTConfigFromJSON and Google's SDKs read. tokenURI is the token_uri it
// names; "" names the server's own URL + "/token" (the server must be
// started then). The token endpoint takes assertions whose aud is any
// token_uri handed out here or its own /token URL. It returns nil only
// when the RSA key cannot be made.
func (s *Server) ServiceAccountKey(tokenURI string) []byte {
	key, keyID, err := s.gcp.serviceAccount()
	if err != nil {
		return nil
	}
	if tokenURI == "" {
		tokenURI = s.URL() + "/token"
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil
	}
	g := &s.gcp
	g.mu.Lock()
	if g.tokenURIs == nil {
		g.tokenURIs = map[string]bool{}
	}
	if len(g.tokenURIs) < 64 {
		g.tokenURIs[tokenURI] = true
	}
	g.mu.Unlock()
	return mustJSON(map[string]string{
		"type":                        "service_account",
		"project_id":                  g.project,
		"private_key_id":              keyID,
		"private_key":                 string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":                g.clientEmail(),
		"client_id":                   "100000000000000000001",
		"auth_uri":                    "https://accounts.google.com/o/oauth2/auth",
		"token_uri":                   tokenURI,
		"auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
		"universe_domain":             "googleapis.com",
	})
}

// TokenRequests returns how many requests reached the token endpoint,
// granted or refused.
func (s *Server) TokenRequests() int {
	s.gcp.mu.Lock()
	defer s.gcp.mu.Unlock()
	return s.gcp.requests
}

// ExpireTokens invalidates every access token issued so far: the next
// Vertex call carrying one gets 401 UNAUTHENTICATED (reason
// ACCESS_TOKEN_EXPIRED), and the client must fetch a new token.
func (s *Server) ExpireTokens() {
	s.gcp.mu.Lock()
	defer s.gcp.mu.Unlock()
	for t := range s.gcp.tokens {
		s.gcp.tokens[t] = time.Time{}
	}
}

// SetTokenLifetime sets how long access tokens issued from now on stay
// valid (DefaultTokenLifetime when d is zero or negative).
func (s *Server) SetTokenLifetime(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set.tokenLifetime = d
}

// tokenErr answers the token endpoint's OAuth2 error.
func (c *call) tokenErr(status int, code, desc string) {
	body := mustJSON(map[string]string{"error": code, "error_description": desc})
	c.w.Header().Set("Content-Length", itoa(len(body)))
	c.writeHead(status, "application/json; charset=utf-8")
	_, _ = c.w.Write(body)
}

// token answers POST /token: the OAuth2 JWT-bearer grant. The assertion
// must be an RS256 JWT signed by the service account's key (kid, when
// present, its private_key_id) with iss its client_email, aud a token_uri
// of its key file, a scope, and exp in the future at most an hour after
// iat. The answer is a fresh access token.
func (c *call) token() {
	g := &c.s.gcp
	g.mu.Lock()
	g.requests++
	g.mu.Unlock()
	if c.r.Method != http.MethodPost {
		c.tokenErr(http.StatusMethodNotAllowed, "invalid_request", "Method not allowed.")
		return
	}
	form, err := url.ParseQuery(string(c.body))
	if err != nil {
		c.tokenErr(http.StatusBadRequest, "invalid_request", "Malformed form body.")
		return
	}
	if gt := form.Get("grant_type"); gt != JWTBearerGrant {
		c.tokenErr(http.StatusBadRequest, "unsupported_grant_type", "Invalid grant_type: "+gt)
		return
	}
	claims, problem := c.verifyAssertion(form.Get("assertion"))
	if problem != "" {
		c.tokenErr(http.StatusBadRequest, "invalid_grant", problem)
		return
	}
	if strings.TrimSpace(claims.Scope) == "" {
		c.tokenErr(http.StatusBadRequest, "invalid_scope", "Invalid OAuth scope or ID token audience provided.")
		return
	}
	lifetime := c.set.tokenLifetime
	if lifetime <= 0 {
		lifetime = DefaultTokenLifetime
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	tok := "ya29.fake-" + base64.RawURLEncoding.EncodeToString(b[:])
	now := c.s.now()
	g.mu.Lock()
	if g.tokens == nil {
		g.tokens = map[string]time.Time{}
	}
	for t, exp := range g.tokens {
		if !now.Before(exp) {
			delete(g.tokens, t)
		}
	}
	for len(g.tokens) >= maxLiveTokens {
		var oldest string
		for t, exp := range g.tokens {
			if oldest == "" || exp.Before(g.tokens[oldest]) {
				oldest = t
			}
		}
		delete(g.tokens, oldest)
	}
	g.tokens[tok] = now.Add(lifetime)
	g.mu.Unlock()
	c.writeJSON(http.StatusOK, map[string]any{
		"access_token": tok,
		"expires_in":   int(max(lifetime/time.Second, 1)),
		"token_type":   "Bearer",
	})
}

// jwtClaims are the claims of a JWT-bearer assertion the fake checks.
type jwtClaims struct {
	Iss   string `json:"iss"`
	Aud   string `json:"aud"`
	Scope string `json:"scope"`
	Iat   int64  `json:"iat"`
	Exp   int64  `json:"exp"`
}

// verifyAssertion checks a JWT-bearer assertion and returns its claims, or
// the error_description Google gives for what is wrong.
func (c *call) verifyAssertion(assertion string) (jwtClaims, string) {
	const badSig = "Invalid JWT Signature."
	var claims jwtClaims
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 || len(assertion) > 16<<10 {
		return claims, "Invalid JWT: the assertion is not a signed JWT."
	}
	var header struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	pb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || json.Unmarshal(hb, &header) != nil || json.Unmarshal(pb, &claims) != nil {
		return claims, "Invalid JWT: the assertion is not a signed JWT."
	}
	key, keyID, err := c.s.gcp.serviceAccount()
	if err != nil {
		return claims, badSig
	}
	if header.Alg != "RS256" || (header.Kid != "" && header.Kid != keyID) {
		return claims, badSig
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(&key.PublicKey, crypto.SHA256, digest[:], sig) != nil {
		return claims, badSig
	}
	if claims.Iss != c.s.gcp.clientEmail() {
		return claims, "Invalid JWT: the issuer is not the service account."
	}
	if !c.knownTokenURI(claims.Aud) {
		return claims, "Invalid JWT: Failed audience check. The expected value is the token_uri of the key file."
	}
	now := c.s.now().Unix()
	if claims.Exp <= now || claims.Exp-claims.Iat > int64(maxJWTLifetime/time.Second) || claims.Iat > claims.Exp {
		return claims, "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."
	}
	return claims, ""
}

// knownTokenURI reports whether aud names this token endpoint: a token_uri
// handed out by ServiceAccountKey, the server's URL or the request's host.
func (c *call) knownTokenURI(aud string) bool {
	if aud == "" {
		return false
	}
	if aud == "http://"+c.r.Host+"/token" || (c.s.URL() != "" && aud == c.s.URL()+"/token") {
		return true
	}
	g := &c.s.gcp
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.tokenURIs[aud]
}

// authorizeVertexToken checks the bearer access token of a Vertex call:
// it must have been issued by the token endpoint, not expired and not
// revoked by ExpireTokens. Anything else is 401 UNAUTHENTICATED whose
// ErrorInfo reason says why: CREDENTIALS_MISSING, ACCESS_TOKEN_EXPIRED
// (expired or revoked) or ACCESS_TOKEN_TYPE_UNSUPPORTED (unknown).
func (c *call) authorizeVertexToken() bool {
	tok, ok := bearer(c.r)
	if !ok {
		c.fail(apiErr{kind: eUnauthorized, status: http.StatusUnauthorized, code: "CREDENTIALS_MISSING"})
		return false
	}
	g := &c.s.gcp
	g.mu.Lock()
	exp, known := g.tokens[tok]
	g.mu.Unlock()
	switch {
	case !known:
		c.fail(apiErr{kind: eUnauthorized, status: http.StatusUnauthorized, code: "ACCESS_TOKEN_TYPE_UNSUPPORTED"})
		return false
	case !c.s.now().Before(exp):
		c.fail(apiErr{kind: eUnauthorized, status: http.StatusUnauthorized, code: "ACCESS_TOKEN_EXPIRED"})
		return false
	}
	return true
}
