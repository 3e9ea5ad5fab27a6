package upauth

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
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"weir.dev/edge/internal/secrets"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing"
	"weir.dev/routing/compile"
)

const saEmail = "weir-edge@demo-project.iam.gserviceaccount.com"

// testRSAKey is one RSA key for every service-account test (generating
// one per test is slow).
var testRSAKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// saKeyPEM is the test key as a service account JSON key holds it.
func saKeyPEM(t *testing.T) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(testRSAKey())
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// saJSON is a service account JSON key for the test key with the given
// token_uri ("" leaves it out).
func saJSON(t *testing.T, tokenURI string) []byte {
	t.Helper()
	k := map[string]string{
		"type": "service_account", "project_id": "demo-project", "private_key_id": "kid-1",
		"private_key": saKeyPEM(t), "client_email": saEmail, "client_id": "100000000000000000001",
		"auth_uri": "https://accounts.google.com/o/oauth2/auth",
	}
	if tokenURI != "" {
		k["token_uri"] = tokenURI
	}
	b, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// keyFragments are pieces of the private key no error may carry.
func keyFragments(t *testing.T) []string {
	t.Helper()
	p := saKeyPEM(t)
	body := strings.ReplaceAll(strings.TrimSpace(p[strings.Index(p, "\n")+1:]), "\n", "")
	return []string{"PRIVATE KEY", body[:24], body[len(body)/2 : len(body)/2+24], "kid-1"}
}

// googleTokenServer is a loopback token endpoint for the JWT grant: it
// checks the grant type and the assertion's RS256 signature with the test
// key's public key and its claims, and issues "ya29.tok-N".
type googleTokenServer struct {
	srv *httptest.Server

	mu      sync.Mutex
	hits    int
	issued  int
	expires int
	status  int    // non-zero: answer this status with an OAuth2 error
	bad     string // the last reason an assertion was refused
	scope   string // the scope expected
}

func newGoogleTokenServer(t *testing.T) *googleTokenServer {
	t.Helper()
	ts := &googleTokenServer{expires: 3599, scope: GoogleCloudPlatformScope}
	ts.srv = httptest.NewServer(http.HandlerFunc(ts.serve))
	t.Cleanup(ts.srv.Close)
	return ts
}

func (ts *googleTokenServer) url() string  { return ts.srv.URL + "/token" }
func (ts *googleTokenServer) host() string { return ts.srv.Listener.Addr().String() }

func (ts *googleTokenServer) count() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.hits
}

func (ts *googleTokenServer) set(f func(ts *googleTokenServer)) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	f(ts)
}

func (ts *googleTokenServer) serve(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.hits++
	w.Header().Set("Content-Type", "application/json")
	if ts.status != 0 {
		w.WriteHeader(ts.status)
		io.WriteString(w, `{"error":"invalid_grant","error_description":"Invalid JWT Signature for `+r.PostForm.Get("assertion")+`"}`)
		return
	}
	if err := ts.check(r); err != nil {
		ts.bad = err.Error()
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":"invalid_grant"}`)
		return
	}
	ts.issued++
	io.WriteString(w, `{"access_token":"ya29.tok-`+strconv.Itoa(ts.issued)+`","expires_in":`+strconv.Itoa(ts.expires)+`,"token_type":"Bearer"}`)
}

// check verifies one JWT-bearer grant request (RFC 7523).
func (ts *googleTokenServer) check(r *http.Request) error {
	if r.Method != http.MethodPost {
		return fmt.Errorf("method %s", r.Method)
	}
	if g := r.PostForm.Get("grant_type"); g != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		return fmt.Errorf("grant_type %q", g)
	}
	parts := strings.Split(r.PostForm.Get("assertion"), ".")
	if len(parts) != 3 {
		return errors.New("assertion is not a JWS")
	}
	var head struct{ Alg, Typ, Kid string }
	var claims struct {
		Iss, Scope, Aud string
		Exp, Iat        int64
	}
	for i, v := range []any{&head, &claims} {
		raw, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, v); err != nil {
			return err
		}
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(&testRSAKey().PublicKey, crypto.SHA256, sum[:], sig); err != nil {
		return fmt.Errorf("signature: %v", err)
	}
	switch {
	case head.Alg != "RS256" || head.Kid != "kid-1":
		return fmt.Errorf("header %+v", head)
	case claims.Iss != saEmail:
		return fmt.Errorf("iss %q", claims.Iss)
	case claims.Aud != ts.srv.URL+"/token":
		return fmt.Errorf("aud %q", claims.Aud)
	case claims.Scope != ts.scope:
		return fmt.Errorf("scope %q", claims.Scope)
	case claims.Exp <= claims.Iat:
		return fmt.Errorf("exp %d iat %d", claims.Exp, claims.Iat)
	}
	return nil
}

// saFixture is a Signer with a loopback token endpoint and upstream, and
// a key secret "sa" bound to both.
type saFixture struct {
	up    *recorder
	idp   *googleTokenServer
	clock *fakeClock
	s     *Signer
	m     *routing.Member
}

func newSAFixture(t *testing.T) *saFixture {
	t.Helper()
	f := &saFixture{up: newRecorder(t), idp: newGoogleTokenServer(t), clock: newClock(signTime)}
	f.s = New(newStore(t, secrets.Secret{Name: "sa", TenantID: "t1", Hosts: []string{f.up.host(), f.idp.host()}, Value: saJSON(t, f.idp.url())}), nil, f.clock.Now)
	t.Cleanup(f.s.CloseIdleConnections)
	f.m = member(routing.WireGemini, "t1", false, routing.Auth{Kind: routing.AuthGoogleServiceAccount}, "sa")
	return f
}

func (f *saFixture) sign(t *testing.T, m *routing.Member) (string, error) {
	t.Helper()
	req := newReq(t, f.up.srv.URL+"/v1/projects/demo-project/locations/europe-west4/publishers/google/models/gemini-x:generateContent", []byte(`{}`))
	err := f.s.Sign(context.Background(), req, []byte(`{}`), m, "t1")
	return req.Header.Get("Authorization"), err
}

func TestServiceAccount(t *testing.T) {
	t.Parallel()
	f := newSAFixture(t)

	t.Run("R-SEC-1 JWT grant signed with the key, bearer token reaches the upstream", func(t *testing.T) {
		req := newReq(t, f.up.srv.URL+"/v1/projects/p/locations/l/publishers/google/models/gemini-x:generateContent", []byte(`{}`))
		if err := f.s.Sign(context.Background(), req, []byte(`{}`), f.m, "t1"); err != nil {
			f.idp.mu.Lock()
			defer f.idp.mu.Unlock()
			t.Fatalf("Sign = %v (token endpoint: %s)", err, f.idp.bad)
		}
		if h, _ := f.up.send(t, req); h.Get("Authorization") != "Bearer ya29.tok-1" {
			t.Fatalf("upstream saw %q", h.Get("Authorization"))
		}
	})
	t.Run("R-SEC-1 a second call reuses the cached token", func(t *testing.T) {
		if got, err := f.sign(t, f.m); err != nil || got != "Bearer ya29.tok-1" {
			t.Fatalf("Sign = %q, %v", got, err)
		}
		other := member(routing.WireGemini, "t1", false, routing.Auth{Kind: routing.AuthGoogleServiceAccount}, "sa")
		other.ID = "rec2/m2"
		if got, err := f.sign(t, other); err != nil || got != "Bearer ya29.tok-1" {
			t.Fatalf("another member of the same key: Sign = %q, %v", got, err)
		}
		if n := f.idp.count(); n != 1 {
			t.Fatalf("token endpoint hit %d times, want 1", n)
		}
	})
	t.Run("R-SEC-1 cached until the refresh margin", func(t *testing.T) {
		f.clock.Add(3599*time.Second - ServiceAccountRefreshMargin - time.Second)
		if got, err := f.sign(t, f.m); err != nil || got != "Bearer ya29.tok-1" {
			t.Fatalf("Sign = %q, %v", got, err)
		}
		if n := f.idp.count(); n != 1 {
			t.Fatalf("token endpoint hit %d times, want 1", n)
		}
	})
	t.Run("R-SEC-1 refreshed before expiry", func(t *testing.T) {
		f.clock.Add(2 * time.Second)
		if got, err := f.sign(t, f.m); err != nil || got != "Bearer ya29.tok-2" {
			t.Fatalf("Sign = %q, %v", got, err)
		}
		if n := f.idp.count(); n != 2 {
			t.Fatalf("token endpoint hit %d times, want 2", n)
		}
	})
	t.Run("R-SEC-1 a short-lived token is refreshed at half its life", func(t *testing.T) {
		f.idp.set(func(ts *googleTokenServer) { ts.expires = 60 })
		f.clock.Add(time.Hour) // tok-2 expired
		if got, err := f.sign(t, f.m); err != nil || got != "Bearer ya29.tok-3" {
			t.Fatalf("Sign = %q, %v", got, err)
		}
		f.clock.Add(29 * time.Second)
		if got, _ := f.sign(t, f.m); got != "Bearer ya29.tok-3" {
			t.Fatalf("before half its life: %q", got)
		}
		f.clock.Add(2 * time.Second)
		if got, err := f.sign(t, f.m); err != nil || got != "Bearer ya29.tok-4" {
			t.Fatalf("after half its life: Sign = %q, %v", got, err)
		}
	})
	t.Run("R-SEC-1 Forget drops the key's token", func(t *testing.T) {
		f.s.Forget("t1", f.m)
		if got, err := f.sign(t, f.m); err != nil || got != "Bearer ya29.tok-5" {
			t.Fatalf("Sign after Forget = %q, %v", got, err)
		}
	})
	t.Run("R-SEC-1 scopes named by the auth are asked for", func(t *testing.T) {
		f.idp.set(func(ts *googleTokenServer) { ts.scope = "https://www.googleapis.com/auth/generative-language" })
		m := member(routing.WireGemini, "t1", false, routing.Auth{Kind: routing.AuthGoogleServiceAccount,
			Scopes: []string{"https://www.googleapis.com/auth/generative-language"}}, "sa")
		if got, err := f.sign(t, m); err != nil || got != "Bearer ya29.tok-6" {
			t.Fatalf("Sign = %q, %v", got, err)
		}
	})
}

// TestServiceAccountRefused: every refusal wraps ErrKeyUnavailable, sends
// no token request when the key may not go there (R-SEC-1, R-SEC-2), leaves
// the request unchanged and never quotes the key.
func TestServiceAccountRefused(t *testing.T) {
	t.Parallel()
	up := newRecorder(t)
	idp := newGoogleTokenServer(t)
	badPEM := strings.Replace(string(saJSON(t, idp.url())), "MII", "XXX", 1)
	store := newStore(t,
		// Bound to the upstream only: the token_uri's host is not allowed.
		secrets.Secret{Name: "sa-upstream-only", TenantID: "t1", Hosts: []string{up.host()}, Value: saJSON(t, idp.url())},
		// Bound to the token endpoint only.
		secrets.Secret{Name: "sa-idp-only", TenantID: "t1", Hosts: []string{idp.host()}, Value: saJSON(t, idp.url())},
		// No token_uri: Google's own, oauth2.googleapis.com, not bound.
		secrets.Secret{Name: "sa-default-uri", TenantID: "t1", Hosts: []string{up.host()}, Value: saJSON(t, "")},
		secrets.Secret{Name: "sa-private-uri", TenantID: "t1", Hosts: []string{up.host(), "10.0.0.1"}, Value: saJSON(t, "https://10.0.0.1/token")},
		secrets.Secret{Name: "sa-http-name", TenantID: "t1", Hosts: []string{up.host(), "idp.example.com"}, Value: saJSON(t, "http://idp.example.com/token")},
		secrets.Secret{Name: "not-json", TenantID: "t1", Hosts: []string{up.host(), idp.host()}, Value: []byte(saKeyPEM(t))},
		secrets.Secret{Name: "wrong-type", TenantID: "t1", Hosts: []string{up.host(), idp.host()},
			Value: []byte(strings.Replace(string(saJSON(t, idp.url())), `"service_account"`, `"authorized_user"`, 1))},
		secrets.Secret{Name: "bad-pem", TenantID: "t1", Hosts: []string{up.host(), idp.host()}, Value: []byte(badPEM)},
	)
	s := New(store, nil, newClock(signTime).Now)
	t.Cleanup(s.CloseIdleConnections)
	for _, tc := range []struct{ name, secret string }{
		{"R-SEC-1 R-END-3 token_uri host not bound", "sa-upstream-only"},
		{"R-SEC-1 R-END-3 upstream host not bound", "sa-idp-only"},
		{"R-SEC-1 R-END-3 default token_uri not bound", "sa-default-uri"},
		{"R-SEC-2 R-END-3 token_uri at a private address", "sa-private-uri"},
		{"R-SEC-2 R-END-3 token_uri over http to a name", "sa-http-name"},
		{"R-END-3 key secret not JSON", "not-json"},
		{"R-END-3 key of another type", "wrong-type"},
		{"R-END-3 member names no key secret", ""},
		{"R-END-3 key secret not set", "missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := newReq(t, up.srv.URL+"/v1beta/models/gemini-x:generateContent", []byte(`{}`))
			before := req.Header.Clone()
			m := member(routing.WireGemini, "t1", false, routing.Auth{Kind: routing.AuthGoogleServiceAccount}, tc.secret)
			err := s.Sign(context.Background(), req, []byte(`{}`), m, "t1")
			if !errors.Is(err, ErrKeyUnavailable) || Kind(err) != routing.KindKeyUnavailable {
				t.Fatalf("Sign = %v (kind %v), want ErrKeyUnavailable", err, Kind(err))
			}
			noLeak(t, err, keyFragments(t)...)
			if len(req.Header) != len(before) || req.Header.Get("Authorization") != "" {
				t.Fatalf("headers changed on error: %v", req.Header)
			}
		})
	}
	t.Run("R-END-3 a key that does not parse signs nothing", func(t *testing.T) {
		t.Parallel()
		req := newReq(t, up.srv.URL+"/v1beta/models/gemini-x:generateContent", []byte(`{}`))
		m := member(routing.WireGemini, "t1", false, routing.Auth{Kind: routing.AuthGoogleServiceAccount}, "bad-pem")
		err := s.Sign(context.Background(), req, []byte(`{}`), m, "t1")
		if !errors.Is(err, ErrKeyUnavailable) {
			t.Fatalf("Sign = %v, want ErrKeyUnavailable", err)
		}
		noLeak(t, err, append(keyFragments(t), "XXX")...)
	})
	// Only the bad-pem key was allowed to reach the token endpoint, and it
	// could not sign a request.
	if n := idp.count(); n != 0 {
		t.Fatalf("token endpoint hit %d times, want 0", n)
	}
}

func TestServiceAccountTokenEndpointErrors(t *testing.T) {
	t.Parallel()
	t.Run("R-END-3 invalid_grant refuses the key, without quoting the assertion", func(t *testing.T) {
		t.Parallel()
		f := newSAFixture(t)
		f.idp.set(func(ts *googleTokenServer) { ts.status = http.StatusBadRequest })
		got, err := f.sign(t, f.m)
		if !errors.Is(err, ErrKeyUnavailable) || got != "" {
			t.Fatalf("Sign = %q, %v; want ErrKeyUnavailable", got, err)
		}
		if !strings.Contains(err.Error(), "invalid_grant") {
			t.Errorf("error %q does not name the OAuth2 error code", err)
		}
		noLeak(t, err, append(keyFragments(t), "eyJ")...)
	})
	t.Run("R-END-3 503 is passing", func(t *testing.T) {
		t.Parallel()
		f := newSAFixture(t)
		f.idp.set(func(ts *googleTokenServer) { ts.status = http.StatusServiceUnavailable })
		if _, err := f.sign(t, f.m); !errors.Is(err, ErrKeyPassing) {
			t.Fatalf("Sign = %v, want ErrKeyPassing", err)
		}
	})
	t.Run("R-END-3 unreachable token endpoint is passing", func(t *testing.T) {
		t.Parallel()
		f := newSAFixture(t)
		f.idp.srv.Close()
		_, err := f.sign(t, f.m)
		if !errors.Is(err, ErrKeyPassing) || Kind(err) != routing.KindKeyPassing {
			t.Fatalf("Sign = %v, want ErrKeyPassing", err)
		}
		noLeak(t, err, keyFragments(t)...)
	})
	t.Run("R-SEC-1 a rotated key gets its own token", func(t *testing.T) {
		t.Parallel()
		f := newSAFixture(t)
		if got, err := f.sign(t, f.m); err != nil || got != "Bearer ya29.tok-1" {
			t.Fatalf("Sign = %q, %v", got, err)
		}
		rotated := strings.Replace(string(saJSON(t, f.idp.url())), "kid-1", "kid-2", 1)
		f.s.SetStore(newStore(t, secrets.Secret{Name: "sa", TenantID: "t1", Hosts: []string{f.up.host(), f.idp.host()}, Value: []byte(rotated)}))
		// The test endpoint expects kid-1, so the rotated key's request is
		// refused: it was sent, not answered from the old key's cache.
		if _, err := f.sign(t, f.m); !errors.Is(err, ErrKeyUnavailable) || f.idp.count() != 2 {
			t.Fatalf("Sign = %v after %d token requests; want a new request, refused", err, f.idp.count())
		}
	})
}

// TestCompiledGeminiAuth signs members of records compiled from config
// (routing/compile), end to end: a gemini API key goes in x-goog-api-key
// by default (DESIGN.md §3), and a google-service-account member gets a
// bearer token.
func TestCompiledGeminiAuth(t *testing.T) {
	t.Parallel()
	up := newRecorder(t)
	idp := newGoogleTokenServer(t)
	s := New(newStore(t,
		secrets.Secret{Name: "gkey", TenantID: "t1", Hosts: []string{up.host()}, Value: []byte(apiKeyValue)},
		secrets.Secret{Name: "sa", TenantID: "t1", Hosts: []string{up.host(), idp.host()}, Value: saJSON(t, idp.url())},
	), nil, newClock(signTime).Now)
	t.Cleanup(s.CloseIdleConnections)
	for _, tc := range []struct {
		name   string
		rec    *configv1.ProviderRecord
		header string
		want   string
	}{
		{"R-SEC-1 gemini API key in x-goog-api-key",
			&configv1.ProviderRecord{Id: "r1", Name: "gem", TenantId: "t1", WireFormat: configv1.WireFormat_WIRE_FORMAT_GEMINI,
				BaseUrl: up.srv.URL + "/v1beta", KeySecret: "gkey", Models: []*configv1.Model{{Name: "gemini-x"}}},
			"X-Goog-Api-Key", apiKeyValue},
		{"R-SEC-1 vertex service account bearer token",
			&configv1.ProviderRecord{Id: "r2", Name: "vertex", TenantId: "t1", WireFormat: configv1.WireFormat_WIRE_FORMAT_GEMINI,
				BaseUrl: up.srv.URL + "/v1/projects/p/locations/l/publishers/google", KeySecret: "sa",
				Auth:   &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_GOOGLE_SERVICE_ACCOUNT},
				Models: []*configv1.Model{{Name: "gemini-x"}}},
			"Authorization", "Bearer ya29.tok-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := compile.Record(tc.rec, false)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			m := rec.Members[0]
			req := newReq(t, m.BaseURL+"/models/gemini-x:generateContent", []byte(`{}`))
			if err := s.Sign(context.Background(), req, []byte(`{}`), m, "t1"); err != nil {
				t.Fatal(err)
			}
			h, _ := up.send(t, req)
			if got := h.Get(tc.header); got != tc.want {
				t.Fatalf("upstream saw %s = %q, want %q (headers %v)", tc.header, got, tc.want, h)
			}
			if tc.header != "Authorization" && h.Get("Authorization") != "" {
				t.Fatalf("API key also sent as Authorization")
			}
		})
	}
}
