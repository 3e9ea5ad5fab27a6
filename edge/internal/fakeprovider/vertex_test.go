package fakeprovider

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2/google"
)

const vertexPath = "/v1/projects/fake-project/locations/us-central1/publishers/google/models/gemini-2.5-flash:"

const cloudScope = "https://www.googleapis.com/auth/cloud-platform"

// vertexClient returns an HTTP client that signs its own JWT with the
// server's service account key and fetches tokens from its /token.
func vertexClient(t *testing.T, s *Server) *http.Client {
	t.Helper()
	key := s.ServiceAccountKey("")
	conf, err := google.JWTConfigFromJSON(key, cloudScope)
	if err != nil {
		t.Fatalf("JWTConfigFromJSON: %v\n%s", err, key)
	}
	return conf.Client(context.Background())
}

// post sends body to base+p with client and returns the status and body.
func post(t *testing.T, client *http.Client, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return resp.StatusCode, v
}

func TestServiceAccountKey(t *testing.T) {
	t.Parallel()
	s, base := start(t, Options{GCPProject: "proj-1"})
	var key map[string]string
	if err := json.Unmarshal(s.ServiceAccountKey(""), &key); err != nil {
		t.Fatal(err)
	}
	if key["type"] != "service_account" || key["project_id"] != "proj-1" || key["token_uri"] != base+"/token" ||
		key["client_email"] != "fakeprovider@proj-1.iam.gserviceaccount.com" || key["private_key_id"] == "" {
		t.Errorf("key file %v", key)
	}
	block, _ := pem.Decode([]byte(key["private_key"]))
	if block == nil || block.Type != "PRIVATE KEY" {
		t.Fatalf("private_key is not a PKCS#8 PEM block")
	}
	if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
		t.Errorf("private_key: %v", err)
	}
	var other map[string]string
	_ = json.Unmarshal(s.ServiceAccountKey("http://elsewhere/token"), &other)
	if other["token_uri"] != "http://elsewhere/token" || other["private_key_id"] != key["private_key_id"] {
		t.Errorf("second key file %v", other)
	}
}

func TestVertexTokenFlow(t *testing.T) {
	t.Parallel()
	s, base := start(t, Options{Tokens: 4, Flavor: FlavorVertex})
	client := vertexClient(t, s)
	for range 3 {
		status, v := post(t, client, base+vertexPath+"generateContent", geminiBody(""))
		if status != 200 || path(v, "candidates.0.content.parts.0.text") != "Hello from the Weir" || path(v, "createTime") == nil {
			t.Fatalf("generateContent %d %v", status, v)
		}
	}
	if n := s.TokenRequests(); n != 1 {
		t.Errorf("TokenRequests = %d, want 1 (the token is reused)", n)
	}
	r, _ := s.LastRequest()
	if r.Flavor != FlavorVertex || r.Model != "gemini-2.5-flash" || !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ya29.") {
		t.Errorf("recorded %v %v %v", r.Flavor, r.Model, r.Header)
	}

	// Streamed and embeddings on the Vertex paths.
	resp, err := client.Post(base+vertexPath+"streamGenerateContent?alt=sse", "application/json", strings.NewReader(geminiBody("")))
	if err != nil {
		t.Fatal(err)
	}
	events, err := readSSE(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || err != nil || len(events) != 4 || !strings.Contains(events[3].data, `"finishReason":"STOP"`) {
		t.Errorf("stream %d %v %v", resp.StatusCode, err, events)
	}
	embedPath := "/v1/projects/fake-project/locations/us-central1/publishers/google/models/text-embedding-005:batchEmbedContents"
	status, v := post(t, client, base+embedPath, `{"requests":[{"model":"publishers/google/models/text-embedding-005","content":{"parts":[{"text":"a"}]}}]}`)
	if status != 200 || len(path(v, "embeddings.0.values").([]any)) != DefaultEmbeddingDims {
		t.Errorf("embeddings %d %v", status, v)
	}

	// Revoked tokens are refused in Google's shape.
	s.ExpireTokens()
	resp, err = http.DefaultClient.Do(mustReq(t, base+vertexPath+"generateContent", r.Header.Get("Authorization")))
	if err != nil {
		t.Fatal(err)
	}
	var g googleErr
	_ = json.NewDecoder(resp.Body).Decode(&g)
	resp.Body.Close()
	if resp.StatusCode != 401 || g.Error.Code != 401 || g.Error.Status != "UNAUTHENTICATED" || !strings.HasPrefix(g.Error.Message, "Request had invalid authentication credentials") ||
		len(g.Error.Details) != 1 || g.Error.Details[0].Reason != "ACCESS_TOKEN_EXPIRED" {
		t.Errorf("expired token: %d %+v", resp.StatusCode, g)
	}
	// A new client gets a new token and is served again.
	if status, v := post(t, vertexClient(t, s), base+vertexPath+"generateContent", geminiBody("")); status != 200 {
		t.Errorf("after a new token: %d %v", status, v)
	}
	if n := s.TokenRequests(); n != 2 {
		t.Errorf("TokenRequests = %d, want 2", n)
	}
}

// mustReq is a generateContent request carrying auth as Authorization.
func mustReq(t *testing.T, url, auth string) *http.Request {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(geminiBody("")))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	return req
}

func TestVertexTokenLifetime(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	s, base := start(t, Options{Now: clock.Now, TokenLifetime: 10 * time.Minute})
	tok, err := google.JWTConfigFromJSON(s.ServiceAccountKey(""), cloudScope)
	if err != nil {
		t.Fatal(err)
	}
	// The JWT carries real time; the fake's clock is in the past of it, so
	// the assertion's exp is in the future for the server.
	t0, err := tok.TokenSource(context.Background()).Token()
	if err != nil {
		t.Fatal(err)
	}
	if t0.TokenType != "Bearer" || t0.AccessToken == "" {
		t.Errorf("token %+v", t0)
	}
	if left := time.Until(t0.Expiry); left < 9*time.Minute || left > 11*time.Minute {
		t.Errorf("expires in %v, want about 10m", left)
	}
	send := func() int {
		resp, err := http.DefaultClient.Do(mustReq(t, base+vertexPath+"generateContent", "Bearer "+t0.AccessToken))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := send(); st != 200 {
		t.Fatalf("fresh token: %d", st)
	}
	clock.Advance(10 * time.Minute)
	if st := send(); st != 401 {
		t.Errorf("token past its lifetime: %d, want 401", st)
	}
	if st := func() int {
		resp, err := http.DefaultClient.Do(mustReq(t, base+vertexPath+"generateContent", ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}(); st != 401 {
		t.Errorf("no token: %d, want 401", st)
	}
}

// signJWT signs claims with key as an RS256 JWT.
func signJWT(t *testing.T, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	in := enc(map[string]string{"alg": "RS256", "typ": "JWT", "kid": kid}) + "." + enc(claims)
	sum := sha256.Sum256([]byte(in))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return in + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func TestVertexTokenEndpointRefuses(t *testing.T) {
	t.Parallel()
	s, base := start(t, Options{})
	var kf map[string]string
	_ = json.Unmarshal(s.ServiceAccountKey(""), &kf)
	block, _ := pem.Decode([]byte(kf["private_key"]))
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	good := k.(*rsa.PrivateKey)
	stranger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	claims := func(edit func(map[string]any)) map[string]any {
		c := map[string]any{"iss": kf["client_email"], "aud": kf["token_uri"], "scope": cloudScope, "iat": now, "exp": now + 3600}
		if edit != nil {
			edit(c)
		}
		return c
	}
	exchange := func(grant, assertion string) (int, map[string]any) {
		form := url.Values{"grant_type": {grant}, "assertion": {assertion}}
		resp, err := http.PostForm(base+"/token", form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}
	kid := kf["private_key_id"]
	if st, v := exchange(JWTBearerGrant, signJWT(t, good, kid, claims(nil))); st != 200 || v["token_type"] != "Bearer" || v["expires_in"] != 3600.0 {
		t.Fatalf("good assertion: %d %v", st, v)
	}
	for _, tc := range []struct {
		name, grant, assertion, wantErr string
	}{
		{"bad signature", JWTBearerGrant, signJWT(t, stranger, kid, claims(nil)), "invalid_grant"},
		{"tampered claims", JWTBearerGrant, func() string {
			j := signJWT(t, good, kid, claims(nil))
			p := strings.Split(j, ".")
			b, _ := json.Marshal(claims(func(c map[string]any) { c["scope"] = "other" }))
			return p[0] + "." + base64.RawURLEncoding.EncodeToString(b) + "." + p[2]
		}(), "invalid_grant"},
		{"wrong issuer", JWTBearerGrant, signJWT(t, good, kid, claims(func(c map[string]any) { c["iss"] = "x@y.iam.gserviceaccount.com" })), "invalid_grant"},
		{"wrong audience", JWTBearerGrant, signJWT(t, good, kid, claims(func(c map[string]any) { c["aud"] = "https://oauth2.googleapis.com/token" })), "invalid_grant"},
		{"expired", JWTBearerGrant, signJWT(t, good, kid, claims(func(c map[string]any) { c["iat"], c["exp"] = now-7200, now-3600 })), "invalid_grant"},
		{"too long-lived", JWTBearerGrant, signJWT(t, good, kid, claims(func(c map[string]any) { c["exp"] = now + 7200 })), "invalid_grant"},
		{"no scope", JWTBearerGrant, signJWT(t, good, kid, claims(func(c map[string]any) { delete(c, "scope") })), "invalid_scope"},
		{"garbage", JWTBearerGrant, "not.a.jwt", "invalid_grant"},
		{"wrong grant", "client_credentials", signJWT(t, good, kid, claims(nil)), "unsupported_grant_type"},
	} {
		if st, v := exchange(tc.grant, tc.assertion); st != 400 || v["error"] != tc.wantErr || v["access_token"] != nil {
			t.Errorf("%s: %d %v", tc.name, st, v)
		}
	}
	if n := s.TokenRequests(); n != 10 {
		t.Errorf("TokenRequests = %d, want 10", n)
	}
	// A made-up token is refused.
	resp, err := http.DefaultClient.Do(mustReq(t, base+vertexPath+"generateContent", "Bearer ya29.made-up"))
	if err != nil {
		t.Fatal(err)
	}
	var g googleErr
	_ = json.NewDecoder(resp.Body).Decode(&g)
	resp.Body.Close()
	if resp.StatusCode != 401 || g.Error.Status != "UNAUTHENTICATED" || len(g.Error.Details) != 1 || g.Error.Details[0].Reason != "ACCESS_TOKEN_TYPE_UNSUPPORTED" {
		t.Errorf("made-up token: %d %+v", resp.StatusCode, g)
	}
}

// R-FMT-8: Vertex faults use Google's shapes too, and faults never touch
// the token endpoint.
func TestVertexFaults(t *testing.T) {
	t.Parallel()
	s, base := start(t, Options{})
	client := vertexClient(t, s)
	s.Enqueue(DailyQuotaExceeded(), Status(503))
	status, v := post(t, client, base+vertexPath+"generateContent", geminiBody(""))
	if status != 429 || path(v, "error.status") != "RESOURCE_EXHAUSTED" || path(v, "error.details.0.violations.0.quotaId") != QuotaPerDay {
		t.Errorf("daily quota: %d %v", status, v)
	}
	status, v = post(t, client, base+vertexPath+"generateContent", geminiBody(""))
	if status != 503 || path(v, "error.message") != googleOverloadedMsg {
		t.Errorf("503: %d %v", status, v)
	}
	if s.TokenRequests() != 1 || s.Pending() != 0 {
		t.Errorf("token requests %d, pending faults %d", s.TokenRequests(), s.Pending())
	}
}
