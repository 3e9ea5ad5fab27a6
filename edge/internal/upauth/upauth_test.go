package upauth

// Every server here is an httptest server on loopback; names that resolve
// elsewhere go through a fake resolver and are refused before any connect.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/google/go-cmp/cmp"

	"weir.dev/edge/internal/netguard"
	"weir.dev/edge/internal/secrets"
	"weir.dev/routing"
)

const (
	apiKeyValue  = "sk-test-api-key-0123456789"
	awsSecretKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	clientSecret = "client-secret-value-42"
)

// fakeClock is a settable clock for token expiry and SigV4 times.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *fakeClock { return &fakeClock{t: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

var signTime = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// recorder is a loopback upstream that keeps the last request's headers
// and body.
type recorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	last *http.Request
	body []byte
	hook func(r *http.Request, body []byte) int
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.last, rec.body = r, body
		hook := rec.hook
		rec.mu.Unlock()
		status := http.StatusOK
		if hook != nil {
			status = hook(r, body)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (rec *recorder) host() string { return rec.srv.Listener.Addr().String() }

// send sends req through a guarded transport and returns what the upstream
// saw.
func (rec *recorder) send(t *testing.T, req *http.Request) (http.Header, int) {
	t.Helper()
	tr := netguard.NewTransport(nil, nil)
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("sending: %v", err)
	}
	resp.Body.Close()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.last.Header.Clone(), resp.StatusCode
}

func newStore(t *testing.T, list ...secrets.Secret) *secrets.Store {
	t.Helper()
	s, err := secrets.NewStore(list)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newReq(t *testing.T, rawURL string, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

func member(wire routing.WireFormat, tenantID string, managed bool, auth routing.Auth, keySecret string) *routing.Member {
	rec := &routing.Record{ID: "rec1", Name: "rec", TenantID: tenantID, Managed: managed, Wire: wire}
	m := &routing.Member{ID: "rec1/m1", Name: "m1", Record: rec, Auth: auth, KeySecret: keySecret}
	rec.Members = []*routing.Member{m}
	return m
}

// noLeak fails when err's text carries any secret value or token.
func noLeak(t *testing.T, err error, extra ...string) {
	t.Helper()
	if err == nil {
		return
	}
	for _, v := range append([]string{apiKeyValue, awsSecretKey, clientSecret, "tok-"}, extra...) {
		if strings.Contains(err.Error(), v) {
			t.Fatalf("error %q leaks a secret", err)
		}
	}
}

func TestSignAPIKey(t *testing.T) {
	t.Parallel()
	store := newStore(t,
		secrets.Secret{Name: "key", TenantID: "t1", Hosts: []string{"127.0.0.1"}, Value: []byte(apiKeyValue)},
		secrets.Secret{Name: "newline", TenantID: "t1", Hosts: []string{"127.0.0.1"}, Value: []byte(apiKeyValue + "\n")},
		secrets.Secret{Name: "key", TenantID: "", Hosts: []string{"127.0.0.1"}, Value: []byte("sk-managed")},
	)
	s := New(store, nil, nil)
	for _, tc := range []struct {
		name    string
		m       *routing.Member
		want    map[string]string
		without []string
	}{
		{"R-SEC-1 openai default header is Authorization Bearer",
			member(routing.WireOpenAI, "t1", false, routing.Auth{Kind: routing.AuthAPIKey}, "key"),
			map[string]string{"Authorization": "Bearer " + apiKeyValue}, []string{"X-Api-Key"}},
		{"R-SEC-1 anthropic default header is x-api-key",
			member(routing.WireAnthropic, "t1", false, routing.Auth{Kind: routing.AuthAPIKey}, "key"),
			map[string]string{"X-Api-Key": apiKeyValue}, []string{"Authorization"}},
		{"R-SEC-1 gemini default header is x-goog-api-key",
			member(routing.WireGemini, "t1", false, routing.Auth{Kind: routing.AuthAPIKey}, "key"),
			map[string]string{"X-Goog-Api-Key": apiKeyValue}, []string{"Authorization", "X-Api-Key"}},
		{"R-SEC-1 bedrock API key is a bearer token",
			member(routing.WireBedrock, "t1", false, routing.Auth{Kind: routing.AuthAPIKey}, "key"),
			map[string]string{"Authorization": "Bearer " + apiKeyValue}, nil},
		{"R-SEC-1 azure api-key header carries the key alone",
			member(routing.WireOpenAI, "t1", false, routing.Auth{Kind: routing.AuthAPIKey, Header: "api-key"}, "key"),
			map[string]string{"Api-Key": apiKeyValue}, []string{"Authorization"}},
		{"R-SEC-1 authorization header in any case gets Bearer",
			member(routing.WireAnthropic, "t1", false, routing.Auth{Kind: routing.AuthAPIKey, Header: "AUTHORIZATION"}, "key"),
			map[string]string{"Authorization": "Bearer " + apiKeyValue}, []string{"X-Api-Key"}},
		{"R-SEC-1 secret's trailing newline is dropped",
			member(routing.WireOpenAI, "t1", false, routing.Auth{Kind: routing.AuthAPIKey}, "newline"),
			map[string]string{"Authorization": "Bearer " + apiKeyValue}, nil},
		{"R-SEC-1 managed record signs with the cluster secret",
			member(routing.WireOpenAI, "", true, routing.Auth{Kind: routing.AuthAPIKey}, "key"),
			map[string]string{"Authorization": "Bearer sk-managed"}, nil},
		{"R-SEC-1 auth none sets nothing",
			member(routing.WireOpenAI, "t1", false, routing.Auth{Kind: routing.AuthNone}, "key"),
			nil, []string{"Authorization", "X-Api-Key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := newRecorder(t)
			req := newReq(t, up.srv.URL+"/v1/chat/completions", []byte(`{}`))
			if err := s.Sign(context.Background(), req, []byte(`{}`), tc.m, "t1"); err != nil {
				t.Fatal(err)
			}
			got, status := up.send(t, req)
			if status != http.StatusOK {
				t.Fatalf("status %d", status)
			}
			for k, v := range tc.want {
				if got.Get(k) != v {
					t.Errorf("upstream saw %s = %q, want %q", k, got.Get(k), v)
				}
			}
			for _, k := range tc.without {
				if _, ok := got[k]; ok {
					t.Errorf("upstream saw %s", k)
				}
			}
		})
	}
}

// fakeResolver maps names to addresses; unknown names fail, so no test asks
// real DNS.
type fakeResolver map[string]string

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	a, ok := r[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

func TestSignUnavailable(t *testing.T) {
	t.Parallel()
	up := newRecorder(t)
	idp := newTokenServer(t)
	store := newStore(t,
		secrets.Secret{Name: "other-host", TenantID: "t1", Hosts: []string{"api.openai.com"}, Value: []byte(apiKeyValue)},
		secrets.Secret{Name: "other-port", TenantID: "t1", Hosts: []string{"127.0.0.1:1"}, Value: []byte(apiKeyValue)},
		secrets.Secret{Name: "ctl", TenantID: "t1", Hosts: []string{up.host()}, Value: []byte("sk-a\r\nX-Evil: 1")},
		secrets.Secret{Name: "aws-bad", TenantID: "t1", Hosts: []string{up.host()}, Value: []byte(awsSecretKey)},
		secrets.Secret{Name: "aws", TenantID: "t1", Hosts: []string{up.host()}, Value: []byte("AKIDEXAMPLE:" + awsSecretKey)},
		secrets.Secret{Name: "aws-other", TenantID: "t1", Hosts: []string{"bedrock-runtime.eu-north-1.amazonaws.com"}, Value: []byte("AKIDEXAMPLE:" + awsSecretKey)},
		// Bound to the upstream, not to the token endpoint.
		secrets.Secret{Name: "cs-upstream", TenantID: "t1", Hosts: []string{up.host()}, Value: []byte(clientSecret)},
		secrets.Secret{Name: "cs", TenantID: "t1", Hosts: []string{idp.host(), "idp.test", "api.example.com", "10.0.0.1"}, Value: []byte(clientSecret)},
		secrets.Secret{Name: "t2-key", TenantID: "t2", Hosts: []string{up.host()}, Value: []byte(apiKeyValue)},
	)
	guarded := &http.Client{Transport: netguard.NewTransport(&netguard.Dialer{Resolver: fakeResolver{"idp.test": "10.0.0.1"}}, nil)}
	s := New(store, guarded, newClock(signTime).Now)

	apiKey := func(string) routing.Auth { return routing.Auth{Kind: routing.AuthAPIKey} }
	sigv4 := func(secret, region string) routing.Auth {
		return routing.Auth{Kind: routing.AuthSigV4, AWSRegion: region, AccessKeySecret: secret}
	}
	oauth := func(tokenURL, secret string) routing.Auth {
		return routing.Auth{Kind: routing.AuthOAuth2, TokenURL: tokenURL, ClientID: "client-1", ClientSecret: secret}
	}
	for _, tc := range []struct {
		name string
		m    *routing.Member
	}{
		{"R-SEC-1 R-END-3 key bound to another host", member(routing.WireOpenAI, "t1", false, apiKey("other-host"), "other-host")},
		{"R-SEC-1 R-END-3 key bound to another port", member(routing.WireOpenAI, "t1", false, apiKey("other-port"), "other-port")},
		{"R-END-3 key not set", member(routing.WireOpenAI, "t1", false, apiKey("missing"), "missing")},
		{"R-END-3 member names no key secret", member(routing.WireOpenAI, "t1", false, apiKey(""), "")},
		{"R-END-3 another tenant's secret", member(routing.WireOpenAI, "t1", false, apiKey("t2-key"), "t2-key")},
		{"R-END-3 record of another tenant", member(routing.WireOpenAI, "t2", false, apiKey("t2-key"), "t2-key")},
		{"R-END-3 managed record has no cluster secret", member(routing.WireOpenAI, "", true, apiKey("other-port"), "other-port")},
		{"R-END-3 key with a line break", member(routing.WireOpenAI, "t1", false, apiKey("ctl"), "ctl")},
		{"R-SEC-3 R-END-3 sigv4 malformed credentials", member(routing.WireBedrock, "t1", false, sigv4("aws-bad", "eu-north-1"), "")},
		{"R-SEC-3 R-END-3 sigv4 without region", member(routing.WireBedrock, "t1", false, sigv4("aws", ""), "")},
		{"R-SEC-3 R-END-3 sigv4 without access key secret", member(routing.WireBedrock, "t1", false, sigv4("", "eu-north-1"), "")},
		{"R-SEC-1 R-END-3 sigv4 key bound to another host", member(routing.WireBedrock, "t1", false, sigv4("aws-other", "eu-north-1"), "")},
		{"R-SEC-1 R-END-3 oauth2 client secret bound to the upstream, not the token endpoint",
			member(routing.WireOpenAI, "t1", false, oauth(idp.srv.URL+"/token", "cs-upstream"), "")},
		{"R-SEC-3 R-END-3 oauth2 without token URL", member(routing.WireOpenAI, "t1", false, oauth("", "cs"), "")},
		{"R-SEC-2 R-END-3 oauth2 token URL over http to a name", member(routing.WireOpenAI, "t1", false, oauth("http://api.example.com/token", "cs"), "")},
		{"R-SEC-2 R-END-3 oauth2 token URL at a private literal", member(routing.WireOpenAI, "t1", false, oauth("https://10.0.0.1/token", "cs"), "")},
		{"R-SEC-2 R-END-3 oauth2 token endpoint resolving to a private address", member(routing.WireOpenAI, "t1", false, oauth("https://idp.test/token", "cs"), "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := newReq(t, up.srv.URL+"/model/x/invoke", []byte(`{}`))
			before := req.Header.Clone()
			err := s.Sign(context.Background(), req, []byte(`{}`), tc.m, "t1")
			if !errors.Is(err, ErrKeyUnavailable) || Kind(err) != routing.KindKeyUnavailable {
				t.Fatalf("Sign = %v (kind %v), want ErrKeyUnavailable", err, Kind(err))
			}
			noLeak(t, err, "sk-a")
			if diff := cmp.Diff(before, req.Header); diff != "" {
				t.Fatalf("headers changed on error (-before +after):\n%s", diff)
			}
		})
	}
	if n := idp.count(); n != 0 {
		t.Fatalf("token endpoint hit %d times, want 0", n)
	}
}

func TestSignSigV4(t *testing.T) {
	t.Parallel()
	store := newStore(t,
		secrets.Secret{Name: "aws", TenantID: "t1", Hosts: []string{"127.0.0.1"}, Value: []byte("AKID:" + awsSecretKey)},
		secrets.Secret{Name: "aws-sts", TenantID: "t1", Hosts: []string{"127.0.0.1"},
			Value: []byte(`{"access_key_id":"ASIAEXAMPLE","secret_access_key":"` + awsSecretKey + `","session_token":"FQoGZXIvYXdzEXAMPLE"}`)},
	)
	clock := newClock(signTime)
	s := New(store, nil, clock.Now)
	body := []byte(`{"anthropic_version":"bedrock-2023-05-31","max_tokens":16,"messages":[]}`)

	for _, tc := range []struct {
		name, secret, service, akid, token string
	}{
		{"R-SEC-3 sigv4 signs for bedrock by default", "aws", "", "AKID", ""},
		{"R-SEC-3 sigv4 with a session token", "aws-sts", "", "ASIAEXAMPLE", "FQoGZXIvYXdzEXAMPLE"},
		{"R-SEC-3 sigv4 with a named service", "aws", "bedrock-runtime", "AKID", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := newRecorder(t)
			m := member(routing.WireBedrock, "t1", false, routing.Auth{
				Kind: routing.AuthSigV4, AWSService: tc.service, AWSRegion: "eu-north-1", AccessKeySecret: tc.secret,
			}, "")
			service := tc.service
			if service == "" {
				service = "bedrock"
			}
			verified := make(chan error, 1)
			up.mu.Lock()
			up.hook = func(r *http.Request, got []byte) int {
				err := verifySigV4(r, got, aws.Credentials{
					AccessKeyID: tc.akid, SecretAccessKey: awsSecretKey, SessionToken: tc.token,
				}, service, "eu-north-1", signTime)
				verified <- err
				if err != nil {
					return http.StatusForbidden
				}
				return http.StatusOK
			}
			up.mu.Unlock()

			req := newReq(t, up.srv.URL+"/model/anthropic.claude-3-5-sonnet-20240620-v1:0/invoke", body)
			req.Header.Set("Accept", "application/json")
			req.Header.Set("Authorization", "Bearer caller-key-must-go")
			if err := s.Sign(context.Background(), req, body, m, "t1"); err != nil {
				t.Fatal(err)
			}
			auth := req.Header.Get("Authorization")
			prefix := "AWS4-HMAC-SHA256 Credential=" + tc.akid + "/20261130/eu-north-1/" + service + "/aws4_request, SignedHeaders="
			if !strings.HasPrefix(auth, prefix) || !strings.Contains(auth, ", Signature=") {
				t.Fatalf("Authorization = %q, want prefix %q", auth, prefix)
			}
			if got := req.Header.Get("X-Amz-Date"); got != "20261130T120000Z" {
				t.Fatalf("X-Amz-Date = %q", got)
			}
			if got := req.Header.Get("X-Amz-Security-Token"); got != tc.token {
				t.Fatalf("X-Amz-Security-Token = %q, want %q", got, tc.token)
			}
			signed := strings.SplitN(strings.TrimPrefix(auth, prefix), ",", 2)[0]
			for _, h := range []string{"content-type", "host", "x-amz-date"} {
				if !strings.Contains(";"+signed+";", ";"+h+";") {
					t.Fatalf("SignedHeaders %q lacks %s", signed, h)
				}
			}
			if tc.token != "" && !strings.Contains(signed, "x-amz-security-token") {
				t.Fatalf("SignedHeaders %q lacks the session token", signed)
			}
			up.send(t, req)
			if err := <-verified; err != nil {
				t.Fatalf("upstream could not verify the signature: %v", err)
			}
		})
	}

	t.Run("R-SEC-3 verifier refuses a changed body", func(t *testing.T) {
		t.Parallel()
		up := newRecorder(t)
		m := member(routing.WireBedrock, "t1", false, routing.Auth{Kind: routing.AuthSigV4, AWSRegion: "eu-north-1", AccessKeySecret: "aws"}, "")
		req := newReq(t, up.srv.URL+"/model/m/invoke", body)
		if err := s.Sign(context.Background(), req, body, m, "t1"); err != nil {
			t.Fatal(err)
		}
		r := req.Clone(context.Background())
		r.Host = up.host()
		if err := verifySigV4(r, append([]byte(" "), body[1:]...), aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: awsSecretKey}, "bedrock", "eu-north-1", signTime); err == nil {
			t.Fatal("a changed body verified")
		}
	})
	t.Run("R-SEC-3 body must match the request", func(t *testing.T) {
		t.Parallel()
		m := member(routing.WireBedrock, "t1", false, routing.Auth{Kind: routing.AuthSigV4, AWSRegion: "eu-north-1", AccessKeySecret: "aws"}, "")
		req := newReq(t, "http://127.0.0.1:1/model/m/invoke", body)
		if err := s.Sign(context.Background(), req, body[:10], m, "t1"); err == nil {
			t.Fatal("signed a body other than the request's")
		}
	})
}

// verifySigV4 checks a request as AWS would: it signs again, with the
// headers the request says it signed, and compares.
func verifySigV4(r *http.Request, body []byte, creds aws.Credentials, service, region string, at time.Time) error {
	auth := r.Header.Get("Authorization")
	_, rest, ok := strings.Cut(auth, "SignedHeaders=")
	if !ok {
		return errors.New("no SignedHeaders")
	}
	signedHeaders, _, _ := strings.Cut(rest, ",")
	again, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	again.ContentLength = r.ContentLength
	for _, h := range strings.Split(signedHeaders, ";") {
		if h == "host" || h == "content-length" {
			continue
		}
		again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), service, region, at); err != nil {
		return err
	}
	if got := again.Header.Get("Authorization"); got != auth {
		return errors.New("signature mismatch:\n got  " + auth + "\n want " + got)
	}
	return nil
}

// tokenServer is a loopback OAuth2 token endpoint: it checks the client
// credentials, counts requests and answers tok-1, tok-2, … unless a status
// is scripted.
type tokenServer struct {
	srv *httptest.Server

	mu       sync.Mutex
	hits     int
	issued   int
	status   int           // non-zero: answer this status with an error body
	location string        // with a 3xx status: where to redirect
	body     string        // non-empty: answer 200 with this body
	block    chan struct{} // non-nil: wait on it before answering
	arrived  chan struct{} // non-nil: signalled when a request arrives
	expires  int
	secret   string
}

func newTokenServer(t *testing.T) *tokenServer {
	t.Helper()
	ts := &tokenServer{expires: 3600, secret: clientSecret}
	ts.srv = httptest.NewServer(http.HandlerFunc(ts.serve))
	t.Cleanup(ts.srv.Close)
	return ts
}

func (ts *tokenServer) host() string { return ts.srv.Listener.Addr().String() }

func (ts *tokenServer) count() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.hits
}

func (ts *tokenServer) set(f func(ts *tokenServer)) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	f(ts)
}

func (ts *tokenServer) serve(w http.ResponseWriter, r *http.Request) {
	ts.mu.Lock()
	ts.hits++
	block, arrived := ts.block, ts.arrived
	ts.mu.Unlock()
	if arrived != nil {
		arrived <- struct{}{}
	}
	if block != nil {
		<-block
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	id, secret, ok := r.BasicAuth()
	if !ok {
		_ = r.ParseForm()
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	} else {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	}
	_ = r.ParseForm()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case ts.status != 0:
		if ts.location != "" {
			w.Header().Set("Location", ts.location)
		}
		w.WriteHeader(ts.status)
		io.WriteString(w, `{"error":"invalid_client","error_description":"client `+clientSecret+` is unknown"}`)
	case ts.body != "":
		io.WriteString(w, ts.body)
	case r.Method != http.MethodPost || r.PostForm.Get("grant_type") != "client_credentials" ||
		id != "client-1" || secret != ts.secret || r.PostForm.Get("scope") != "inference read":
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":"invalid_client"}`)
	default:
		ts.issued++
		tok := "tok-" + strconv.Itoa(ts.issued)
		io.WriteString(w, `{"access_token":"`+tok+`","token_type":"Bearer","expires_in":`+strconv.Itoa(ts.expires)+`}`)
	}
}

// oauthFixture is a Signer with a loopback token endpoint and upstream.
type oauthFixture struct {
	up    *recorder
	idp   *tokenServer
	clock *fakeClock
	s     *Signer
	m     *routing.Member
}

func newOAuthFixture(t *testing.T) *oauthFixture {
	t.Helper()
	f := &oauthFixture{up: newRecorder(t), idp: newTokenServer(t), clock: newClock(signTime)}
	f.s = New(newStore(t, secrets.Secret{Name: "cs", TenantID: "t1", Hosts: []string{f.idp.host()}, Value: []byte(clientSecret)}), nil, f.clock.Now)
	t.Cleanup(f.s.CloseIdleConnections)
	f.m = member(routing.WireOpenAI, "t1", false, routing.Auth{
		Kind: routing.AuthOAuth2, TokenURL: f.idp.srv.URL + "/oauth/token", ClientID: "client-1", ClientSecret: "cs",
		Scopes: []string{"inference", "read"},
	}, "")
	return f
}

func (f *oauthFixture) sign(ctx context.Context, t *testing.T) (string, error) {
	t.Helper()
	req := newReq(t, f.up.srv.URL+"/v1/chat/completions", []byte(`{}`))
	err := f.s.Sign(ctx, req, []byte(`{}`), f.m, "t1")
	return req.Header.Get("Authorization"), err
}

func TestOAuth2Caching(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t)

	t.Run("R-SEC-3 concurrent calls share one token request", func(t *testing.T) {
		var wg sync.WaitGroup
		got := make([]string, 32)
		errs := make([]error, len(got))
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := newReq(t, f.up.srv.URL+"/v1/chat/completions", nil)
				errs[i] = f.s.Sign(context.Background(), req, nil, f.m, "t1")
				got[i] = req.Header.Get("Authorization")
			}()
		}
		wg.Wait()
		for i := range got {
			if errs[i] != nil || got[i] != "Bearer tok-1" {
				t.Fatalf("call %d: %q, %v", i, got[i], errs[i])
			}
		}
		if n := f.idp.count(); n != 1 {
			t.Fatalf("token endpoint hit %d times, want 1", n)
		}
	})
	t.Run("R-SEC-3 token reaches the upstream", func(t *testing.T) {
		req := newReq(t, f.up.srv.URL+"/v1/chat/completions", []byte(`{}`))
		if err := f.s.Sign(context.Background(), req, []byte(`{}`), f.m, "t1"); err != nil {
			t.Fatal(err)
		}
		if h, _ := f.up.send(t, req); h.Get("Authorization") != "Bearer tok-1" {
			t.Fatalf("upstream saw %q", h.Get("Authorization"))
		}
	})
	t.Run("R-SEC-3 cached until shortly before expiry", func(t *testing.T) {
		f.clock.Add(3500 * time.Second)
		if got, err := f.sign(context.Background(), t); err != nil || got != "Bearer tok-1" {
			t.Fatalf("Sign = %q, %v", got, err)
		}
		if n := f.idp.count(); n != 1 {
			t.Fatalf("token endpoint hit %d times, want 1", n)
		}
	})
	t.Run("R-SEC-3 refreshed before expiry", func(t *testing.T) {
		f.clock.Add(41 * time.Second) // 59 s before expiry
		if got, err := f.sign(context.Background(), t); err != nil || got != "Bearer tok-2" {
			t.Fatalf("Sign = %q, %v", got, err)
		}
		if n := f.idp.count(); n != 2 {
			t.Fatalf("token endpoint hit %d times, want 2", n)
		}
	})
	t.Run("R-SEC-3 a failed early refresh keeps the valid token", func(t *testing.T) {
		f.clock.Add(3550 * time.Second) // 50 s before tok-2 expires
		f.idp.set(func(ts *tokenServer) { ts.status = http.StatusServiceUnavailable })
		if got, err := f.sign(context.Background(), t); err != nil || got != "Bearer tok-2" {
			t.Fatalf("Sign = %q, %v", got, err)
		}
		f.clock.Add(51 * time.Second) // expired
		got, err := f.sign(context.Background(), t)
		if !errors.Is(err, ErrKeyPassing) || got != "" {
			t.Fatalf("Sign = %q, %v; want ErrKeyPassing after expiry", got, err)
		}
		f.idp.set(func(ts *tokenServer) { ts.status = 0 })
	})
	t.Run("R-SEC-3 Forget drops the cached token", func(t *testing.T) {
		if got, err := f.sign(context.Background(), t); err != nil || got != "Bearer tok-3" {
			t.Fatalf("Sign = %q, %v", got, err)
		}
		f.s.Forget("t1", f.m)
		if got, err := f.sign(context.Background(), t); err != nil || got != "Bearer tok-4" {
			t.Fatalf("Sign after Forget = %q, %v", got, err)
		}
	})
	t.Run("R-SEC-1 a rotated client secret gets its own token", func(t *testing.T) {
		f.idp.set(func(ts *tokenServer) { ts.secret = "rotated-secret" })
		f.s.SetStore(newStore(t, secrets.Secret{Name: "cs", TenantID: "t1", Hosts: []string{f.idp.host()}, Value: []byte("rotated-secret")}))
		if got, err := f.sign(context.Background(), t); err != nil || got != "Bearer tok-5" {
			t.Fatalf("Sign = %q, %v", got, err)
		}
	})
}

func TestOAuth2Errors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		script func(ts *tokenServer)
		want   error
		kind   routing.FailureKind
	}{
		{"R-END-3 401 refuses the credential", func(ts *tokenServer) { ts.status = 401 }, ErrKeyUnavailable, routing.KindKeyUnavailable},
		{"R-END-3 400 invalid_client", func(ts *tokenServer) { ts.status = 400 }, ErrKeyUnavailable, routing.KindKeyUnavailable},
		{"R-END-3 403", func(ts *tokenServer) { ts.status = 403 }, ErrKeyUnavailable, routing.KindKeyUnavailable},
		{"R-END-3 wrong client secret", func(ts *tokenServer) { ts.secret = "something-else" }, ErrKeyUnavailable, routing.KindKeyUnavailable},
		{"R-END-3 404 token URL", func(ts *tokenServer) { ts.status = 404 }, ErrKeyUnavailable, routing.KindKeyUnavailable},
		{"R-END-3 200 without a token", func(ts *tokenServer) { ts.body = `{"token_type":"Bearer"}` }, ErrKeyUnavailable, routing.KindKeyUnavailable},
		{"R-END-3 200 with an unusable token", func(ts *tokenServer) { ts.body = `{"access_token":"a b","expires_in":60}` }, ErrKeyUnavailable, routing.KindKeyUnavailable},
		{"R-END-3 503 is passing", func(ts *tokenServer) { ts.status = 503 }, ErrKeyPassing, routing.KindKeyPassing},
		{"R-END-3 500 is passing", func(ts *tokenServer) { ts.status = 500 }, ErrKeyPassing, routing.KindKeyPassing},
		{"R-END-3 429 is passing", func(ts *tokenServer) { ts.status = 429 }, ErrKeyPassing, routing.KindKeyPassing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newOAuthFixture(t)
			f.idp.set(tc.script)
			got, err := f.sign(context.Background(), t)
			if !errors.Is(err, tc.want) || Kind(err) != tc.kind {
				t.Fatalf("Sign = %v (kind %v), want %v", err, Kind(err), tc.want)
			}
			if got != "" {
				t.Fatalf("Authorization set on error: %q", got)
			}
			noLeak(t, err, "something-else")
		})
	}

	t.Run("R-SEC-1 R-END-3 a redirect is not followed", func(t *testing.T) {
		t.Parallel()
		f := newOAuthFixture(t)
		thief := newTokenServer(t)
		f.idp.set(func(ts *tokenServer) { ts.status, ts.location = http.StatusTemporaryRedirect, thief.srv.URL+"/token" })
		_, err := f.sign(context.Background(), t)
		if !errors.Is(err, ErrKeyUnavailable) {
			t.Fatalf("Sign = %v, want ErrKeyUnavailable", err)
		}
		if n := thief.count(); n != 0 {
			t.Fatalf("the client secret followed a redirect to another host (%d requests)", n)
		}
	})

	t.Run("R-END-3 unreachable token endpoint is passing", func(t *testing.T) {
		t.Parallel()
		f := newOAuthFixture(t)
		f.idp.srv.Close()
		_, err := f.sign(context.Background(), t)
		if !errors.Is(err, ErrKeyPassing) || Kind(err) != routing.KindKeyPassing {
			t.Fatalf("Sign = %v, want ErrKeyPassing", err)
		}
	})

	t.Run("R-END-4 call cut while the token is fetched", func(t *testing.T) {
		t.Parallel()
		f := newOAuthFixture(t)
		release := make(chan struct{})
		arrived := make(chan struct{}, 1)
		f.idp.set(func(ts *tokenServer) { ts.block, ts.arrived = release, arrived })
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := f.sign(ctx, t)
			done <- err
		}()
		<-arrived
		cancel()
		err := <-done
		if !errors.Is(err, context.Canceled) || Kind(err) != routing.KindCallEnded {
			t.Fatalf("Sign = %v (kind %v), want context.Canceled", err, Kind(err))
		}
		// The fetch goes on without the cut call and fills the cache.
		f.idp.set(func(ts *tokenServer) { ts.block, ts.arrived = nil, nil })
		close(release)
		deadline, stop := context.WithTimeout(context.Background(), 10*time.Second)
		defer stop()
		got, err := f.sign(deadline, t)
		if err != nil || got != "Bearer tok-1" {
			t.Fatalf("Sign after the cut = %q, %v", got, err)
		}
		if n := f.idp.count(); n != 1 {
			t.Fatalf("token endpoint hit %d times, want 1", n)
		}
	})

	t.Run("R-END-4 call already ended", func(t *testing.T) {
		t.Parallel()
		f := newOAuthFixture(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
		defer cancel()
		<-ctx.Done()
		_, err := f.sign(ctx, t)
		if !errors.Is(err, context.DeadlineExceeded) || Kind(err) != routing.KindCallEnded {
			t.Fatalf("Sign = %v, want context.DeadlineExceeded", err)
		}
		if n := f.idp.count(); n != 0 {
			t.Fatalf("token endpoint hit %d times, want 0", n)
		}
	})
}

func TestKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want routing.FailureKind
	}{
		{"nil", nil, 0},
		{"R-END-3 unavailable", errors.New("x"), routing.KindKeyPassing},
		{"R-END-3 wrapped unavailable", errors.Join(errors.New("x"), ErrKeyUnavailable), routing.KindKeyUnavailable},
		{"R-END-3 passing", ErrKeyPassing, routing.KindKeyPassing},
		{"R-END-4 cancelled", context.Canceled, routing.KindCallEnded},
		{"R-END-4 deadline", context.DeadlineExceeded, routing.KindCallEnded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Kind(tc.err); got != tc.want {
				t.Fatalf("Kind(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestMemberPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name              string
		managed, internal bool
		want              netguard.Policy
	}{
		{"R-SEC-2 tenant record", false, false, netguard.PolicyTenant},
		{"R-SEC-2 managed record", true, false, netguard.PolicyTrusted},
		{"R-SEC-2 internal record", false, true, netguard.PolicyTrusted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := member(routing.WireOpenAI, "t1", tc.managed, routing.Auth{}, "")
			m.Record.Internal = tc.internal
			if got := MemberPolicy(m); got != tc.want {
				t.Fatalf("MemberPolicy = %v, want %v", got, tc.want)
			}
		})
	}
	if MemberPolicy(nil) != netguard.PolicyTenant {
		t.Fatal("MemberPolicy(nil) must be the stricter policy")
	}
}

func TestCanonicalHeaderKey(t *testing.T) {
	for _, h := range []string{"authorization", "x-api-key", "api-key", "x-goog-api-key", "Authorization", "X-Custom-Key", "x_odd"} {
		if got, want := canonicalHeaderKey(h), textproto.CanonicalMIMEHeaderKey(h); got != want {
			t.Errorf("canonicalHeaderKey(%q) = %q, want %q", h, got, want)
		}
	}
}
