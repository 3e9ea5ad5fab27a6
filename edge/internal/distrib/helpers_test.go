package distrib

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"weir.dev/edge/internal/fakeprovider"
	"weir.dev/edge/internal/gateway"
	"weir.dev/edge/internal/natstest"
	"weir.dev/edge/internal/netguard"
	"weir.dev/edge/internal/secrets"
	"weir.dev/edge/internal/upauth"
	"weir.dev/edge/internal/wire"
	"weir.dev/edge/internal/wire/openai"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing"
	"weir.dev/routing/natsnames"
)

const (
	testCallerKey   = "weir-test-key-0123456789"
	testProviderKey = "sk-provider-secret-value"
	testTenant      = "00000000-0000-0000-0000-0000000000aa"
)

var testEdgeKey = []byte("0123456789abcdef0123456789abcdef")

// testSigningKey stands for the control plane's config signing key;
// testPublicKey is what the test edges verify with.
var (
	testSigningKey = ed25519.NewKeyFromSeed([]byte("weir-test-config-signing-seed-32"))
	testPublicKey  = testSigningKey.Public().(ed25519.PublicKey)
)

// signWith wraps payload in a Signed envelope for name, as the control
// plane does, signed with key.
func signWith(t testing.TB, key ed25519.PrivateKey, name string, payload []byte) []byte {
	t.Helper()
	b, err := proto.Marshal(&configv1.Signed{Payload: payload, Signature: ed25519.Sign(key, signedMessage(name, payload))})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// signed is signWith the test signing key.
func signed(t testing.TB, name string, payload []byte) []byte {
	t.Helper()
	return signWith(t, testSigningKey, name, payload)
}

func testLog(t *testing.T) *slog.Logger {
	if os.Getenv("WEIR_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startNATS starts an embedded NATS server with JetStream on loopback (see
// package natstest), which a test can stop and start again on the same port
// and store.
func startNATS(t *testing.T, mutate ...func(*natstest.Options)) *natstest.Server {
	t.Helper()
	var o natstest.Options
	for _, m := range mutate {
		m(&o)
	}
	return natstest.Start(t, o)
}

func connect(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := Connect(url, "test", Auth{Insecure: true}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func seal(t *testing.T, v string) []byte {
	t.Helper()
	b, err := secrets.Seal(testEdgeKey, []byte(v), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tenantSnap is a tenant with one openai pool "pool" serving gpt-x over
// one member per base URL ("m0", "m1", …, all in tier 1, weight 1), with
// the provider key sealed for 127.0.0.1.
func tenantSnap(t *testing.T, version uint64, baseURLs ...string) *configv1.TenantSnapshot {
	t.Helper()
	sum := sha256.Sum256([]byte(testCallerKey))
	rec := &configv1.ProviderRecord{
		Id: "rec-pool", Name: "pool", TenantId: testTenant, WireFormat: configv1.WireFormat_WIRE_FORMAT_OPENAI,
		Models: []*configv1.Model{{Name: "gpt-x", Kind: configv1.ModelKind_MODEL_KIND_CHAT}},
		Auth:   &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "authorization"}, KeySecret: "key",
		Recovery: &configv1.Recovery{AttemptDeadline: durationpb.New(5 * time.Second), CallDeadline: durationpb.New(20 * time.Second)},
	}
	for i, u := range baseURLs {
		acct := "acct-" + itoa(i)
		rec.Members = append(rec.Members, &configv1.Member{Name: "m" + itoa(i), BaseUrl: u + "/v1", Weight: 1, Order: 1, Account: &acct})
	}
	return &configv1.TenantSnapshot{
		Version: version,
		Tenant:  &configv1.Tenant{Id: testTenant, Name: "acme"},
		ApiKeys: []*configv1.ApiKey{{Id: "key-1", Name: "ci", Sha256: sum[:]}},
		Records: []*configv1.ProviderRecord{rec},
		Secrets: []*configv1.Secret{{Name: "key", TenantId: testTenant, Hosts: []string{"127.0.0.1"}, Ciphertext: seal(t, testProviderKey)}},
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// putKV puts a value into a bucket (creating it as the control plane would);
// a value of WEIR_CONFIG is signed first, as the control plane signs it.
func putKV(t *testing.T, nc *nats.Conn, cfg jetstream.KeyValueConfig, key string, val []byte) {
	t.Helper()
	if cfg.Bucket == natsnames.ConfigBucket {
		val = signed(t, key, val)
	}
	putRawKV(t, nc, cfg, key, val)
}

// putRawKV puts val as it is, as a process without the signing key would.
func putRawKV(t *testing.T, nc *nats.Conn, cfg jetstream.KeyValueConfig, key string, val []byte) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := ensureKV(ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, key, val); err != nil {
		t.Fatal(err)
	}
}

// storeSink keeps the last secret store it was given.
type storeSink struct{ p atomic.Pointer[secrets.Store] }

func (s *storeSink) SetStore(st *secrets.Store) { s.p.Store(st) }

// testEdge is an Edge with its registry, states, signer and (optionally) a
// gateway on loopback in front of it.
type testEdge struct {
	*Edge
	reg    *gateway.Registry
	states *routing.States
	signer *upauth.Signer
	url    string
}

func newTestEdge(t *testing.T, natsURL, id, stateDir string, mutate ...func(*Options)) *testEdge {
	t.Helper()
	nc := connect(t, natsURL)
	te := &testEdge{reg: gateway.NewRegistry(), states: routing.NewStates()}
	transport := netguard.NewTransport(nil, nil)
	t.Cleanup(transport.CloseIdleConnections)
	te.signer = upauth.New(nil, &http.Client{Transport: transport}, time.Now)
	o := Options{NATS: nc, EdgeID: id, StateDir: stateDir, EdgeKey: testEdgeKey, ConfigPublicKey: testPublicKey, Registry: te.reg, States: te.states, Secrets: te.signer,
		Log: testLog(t).With("edge", id), ViewInterval: 50 * time.Millisecond, AckTimeout: time.Second}
	for _, m := range mutate {
		m(&o)
	}
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	te.Edge = e
	gw, err := gateway.New(gateway.Config{
		EdgeID: id, Registry: te.reg, States: te.states,
		Adapters: map[routing.WireFormat]wire.Adapter{routing.WireOpenAI: openai.Adapter{}},
		Signer:   te.signer, SignErrorKind: upauth.Kind, Transport: transport,
		Sink: e.Usage(), Budgets: e.Budgets(), Affinity: e.Affinity(), LiveEdges: e.LiveEdges,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	te.url = srv.URL
	return te
}

// start starts the edge and closes it at the end of the test.
func (te *testEdge) start(t *testing.T) {
	t.Helper()
	if err := te.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = te.Close(ctx)
	})
}

// call posts a chat completion for job (none when "") and returns the
// status and the member that answered.
func (te *testEdge) call(t *testing.T, job string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, te.url+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-x","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+testCallerKey)
	req.Header.Set("Content-Type", "application/json")
	if job != "" {
		req.Header.Set("X-Weir-Job", job)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Weir-Member")
}

func newFake(t *testing.T) *fakeprovider.Server {
	t.Helper()
	f := fakeprovider.New(fakeprovider.Options{APIKey: testProviderKey})
	if _, err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func mustJS(t *testing.T, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
