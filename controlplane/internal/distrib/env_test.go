package distrib_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/distrib"
	"weir.dev/controlplane/internal/natsembed"
	"weir.dev/controlplane/internal/secretbox"
	"weir.dev/controlplane/internal/server"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/pgtest"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/proto/gen/weir/admin/v1/adminv1connect"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/natsnames"
)

// env is a control plane on a fresh database with its admin API served over
// loopback, an embedded NATS server on a random port, and the buckets set
// up. Nothing of the distributor runs until the test starts it.
type env struct {
	t       testing.TB
	st      *store.Store
	box     *secretbox.Box
	ns      *natsembed.Server
	nc      *nats.Conn
	js      jetstream.JetStream
	b       distrib.Buckets
	cfg     distrib.Config
	log     *slog.Logger
	api     *clients
	edgeKey []byte
	signer  *distrib.Signer
}

// clients are the admin API clients, as the cluster admin.
type clients struct {
	tenants   adminv1connect.TenantServiceClient
	keys      adminv1connect.ApiKeyServiceClient
	budgets   adminv1connect.BudgetServiceClient
	pools     adminv1connect.PoolServiceClient
	providers adminv1connect.ProviderServiceClient
	edges     adminv1connect.EdgeServiceClient
	doctor    adminv1connect.DoctorServiceClient
	secrets   adminv1connect.SecretServiceClient
}

// bearer adds an admin token to every request.
type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

func testLog(t testing.TB) *slog.Logger {
	if testing.Verbose() || os.Getenv("WEIR_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.DiscardHandler)
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ctx := context.Background()
	st := store.New(pgtest.New(t))
	box, err := secretbox.NewBox(bytes.Repeat([]byte{7}, secretbox.KeySize), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, st: st, box: box, ns: natsembed.NewTest(t), log: testLog(t), edgeKey: bytes.Repeat([]byte{9}, 32)}
	e.nc = e.connect()
	if e.js, err = jetstream.New(e.nc); err != nil {
		t.Fatal(err)
	}
	if e.b, err = distrib.Setup(ctx, e.js, 1); err != nil {
		t.Fatal(err)
	}
	e.cfg = distrib.DefaultConfig()
	e.cfg.EdgeKey, e.cfg.Open, e.cfg.Log = e.edgeKey, distrib.OpenWith(box), e.log
	e.cfg.IngestAckWait = 2 * time.Second
	e.cfg.SigningKey = bytes.Repeat([]byte{5}, 32)
	if e.signer, err = distrib.NewSigner(e.cfg.SigningKey); err != nil {
		t.Fatal(err)
	}

	cmd := distrib.NewCommander(e.nc, e.signer)
	srv := httptest.NewServer(server.Handler(server.Deps{Store: st, Box: box, Log: e.log, Resetter: cmd, Revoker: cmd}))
	t.Cleanup(srv.Close)
	token, err := auth.Bootstrap(ctx, st, "root", false, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: bearer{token: token, rt: http.DefaultTransport}}
	e.api = &clients{
		tenants:   adminv1connect.NewTenantServiceClient(hc, srv.URL),
		keys:      adminv1connect.NewApiKeyServiceClient(hc, srv.URL),
		budgets:   adminv1connect.NewBudgetServiceClient(hc, srv.URL),
		pools:     adminv1connect.NewPoolServiceClient(hc, srv.URL),
		providers: adminv1connect.NewProviderServiceClient(hc, srv.URL),
		edges:     adminv1connect.NewEdgeServiceClient(hc, srv.URL),
		doctor:    adminv1connect.NewDoctorServiceClient(hc, srv.URL),
		secrets:   adminv1connect.NewSecretServiceClient(hc, srv.URL),
	}
	return e
}

// connect opens a NATS connection closed when the test ends.
func (e *env) connect() *nats.Conn {
	e.t.Helper()
	nc, err := nats.Connect(e.ns.ClientURL())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(nc.Close)
	return nc
}

// runDistributor starts a distributor with e.cfg and stops it (waiting) when
// the test ends or stop is called.
func (e *env) runDistributor() (stop func()) {
	e.t.Helper()
	d, err := distrib.New(e.st, e.nc, e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.run(d.Run)
}

// run runs fn until the test ends or stop is called, which waits for it.
func (e *env) run(fn func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				e.t.Errorf("run: %v", err)
			}
		})
	}
	e.t.Cleanup(stop)
	return stop
}

// tenant creates a tenant through the API and returns its id.
func (e *env) tenant(name string) pgtype.UUID {
	e.t.Helper()
	resp, err := e.api.tenants.CreateTenant(context.Background(), connect.NewRequest(&adminv1.CreateTenantRequest{Name: name}))
	if err != nil {
		e.t.Fatal(err)
	}
	id, err := store.ParseUUID(resp.Msg.GetTenant().GetId())
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// budget sets a budget through the API and returns its id.
func (e *env) budget(tenant, name, key string, limit int64) pgtype.UUID {
	e.t.Helper()
	resp, err := e.api.budgets.SetBudget(context.Background(), connect.NewRequest(&adminv1.SetBudgetRequest{
		Tenant: tenant, Name: name, LimitNanos: limit, Period: configv1.BudgetPeriod_BUDGET_PERIOD_TOTAL, Key: key,
	}))
	if err != nil {
		e.t.Fatal(err)
	}
	id, err := store.ParseUUID(resp.Msg.GetBudget().GetId())
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// key creates an API key and returns its id and plaintext.
func (e *env) key(tenant, name string) (pgtype.UUID, string) {
	e.t.Helper()
	resp, err := e.api.keys.CreateApiKey(context.Background(), connect.NewRequest(&adminv1.CreateApiKeyRequest{Tenant: tenant, Name: name}))
	if err != nil {
		e.t.Fatal(err)
	}
	id, err := store.ParseUUID(resp.Msg.GetApiKey().GetId())
	if err != nil {
		e.t.Fatal(err)
	}
	return id, resp.Msg.GetKey()
}

// pool creates a pool record of vLLM members on loopback.
func (e *env) pool(tenant, record string, members ...string) {
	e.t.Helper()
	for i, m := range members {
		req := &adminv1.AddPoolMemberRequest{
			Tenant: tenant, Record: record, Member: m, Preset: adminv1.Preset_PRESET_VLLM,
			Spec: &adminv1.PoolMemberSpec{BaseUrl: fmt.Sprintf("http://127.0.0.1:%d/v1", 9001+i), Weight: 1},
		}
		if i == 0 {
			req.RecordSpec = &adminv1.ProviderSpec{Models: []*configv1.Model{{Name: "m"}}}
		}
		if _, err := e.api.pools.AddPoolMember(context.Background(), connect.NewRequest(req)); err != nil {
			e.t.Fatalf("pool add %s/%s: %v", record, m, err)
		}
	}
}

// tenantSnapshot reads a tenant's snapshot from WEIR_CONFIG (nil when the
// key is absent).
func (e *env) tenantSnapshot(ctx context.Context, id pgtype.UUID) *configv1.TenantSnapshot {
	e.t.Helper()
	key := natsnames.TenantKey(store.UUIDString(id))
	entry, err := e.b.Config.Get(ctx, key)
	if err != nil {
		return nil
	}
	payload, err := e.signer.Open(key, entry.Value())
	if err != nil {
		e.t.Fatal(err)
	}
	s := &configv1.TenantSnapshot{}
	if err := proto.Unmarshal(payload, s); err != nil {
		e.t.Fatal(err)
	}
	return s
}

// eventually polls cond every 10 ms until it holds or timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type pgtypeUUID = pgtype.UUID

func pgNow() pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: time.Now().Add(time.Second), Valid: true}
}

func sqlcGetCall(tenant pgtype.UUID, callID string) sqlc.GetCallParams {
	return sqlc.GetCallParams{TenantID: tenant, CallID: callID}
}

func mustUUID(t testing.TB, s string) pgtype.UUID {
	t.Helper()
	u, err := store.ParseUUID(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func mustMarshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
