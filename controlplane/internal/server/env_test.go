package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/secretbox"
	"weir.dev/controlplane/internal/server"
	"weir.dev/controlplane/internal/store"
	"weir.dev/controlplane/internal/throttle"
	"weir.dev/db/pgtest"
	"weir.dev/db/sqlc"
	"weir.dev/listen/logflags/logtest"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/proto/gen/weir/admin/v1/adminv1connect"
)

// Roles of the test callers. Names double as admin names.
const (
	cluster = "cluster"
	tadmA   = "tadm-a"
	padmA   = "padm-a"
	costA   = "cost-a"
	tadmB   = "tadm-b"
	noToken = "none"
	badTok  = "bad"
)

// callers are the roles every authorization test runs as.
var callers = []string{cluster, tadmA, padmA, costA, noToken, badTok}

// recorder is an http.RoundTripper that adds a bearer token and keeps a copy
// of every response body (for the secret-leak scan).
type recorder struct {
	token string
	rt    http.RoundTripper
	out   *logtest.Buffer
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	_, _ = r.out.Write(body)
	for k, vs := range resp.Header {
		for _, v := range vs {
			_, _ = io.WriteString(r.out, k+": "+v+"\n")
		}
	}
	for k, vs := range resp.Trailer {
		for _, v := range vs {
			_, _ = io.WriteString(r.out, k+": "+v+"\n")
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// clients are one caller's Connect clients.
type clients struct {
	tenants adminv1connect.TenantServiceClient
	keys    adminv1connect.ApiKeyServiceClient
	admins  adminv1connect.AdminServiceClient
	secrets adminv1connect.SecretServiceClient
	budgets adminv1connect.BudgetServiceClient
	usage   adminv1connect.UsageServiceClient
	calls   adminv1connect.CallServiceClient
	edges   adminv1connect.EdgeServiceClient
	doctor  adminv1connect.DoctorServiceClient
	audit   adminv1connect.AuditServiceClient
}

// env is a control plane on a fresh database, served over loopback, with
// tenants a and b and one caller per role.
type env struct {
	t         *testing.T
	st        *store.Store
	url       string
	logs      *logtest.Buffer
	responses *logtest.Buffer
	tokens    map[string]string
	as        map[string]*clients
	ids       map[string]pgtype.UUID // tenant name → id
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	st := store.New(pgtest.New(t))
	box, err := secretbox.NewBox(bytes.Repeat([]byte{42}, secretbox.KeySize), nil)
	if err != nil {
		t.Fatal(err)
	}
	logs := &logtest.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// The authorization matrix sends a bad token to every procedure: its
	// limiter lets every failure through (TestBadTokensAreSlowedPerAddress
	// tests the default one).
	lim := throttle.New(throttle.Config{Burst: 1 << 20})
	srv := httptest.NewServer(server.Handler(server.Deps{Store: st, Box: box, Log: log, AuthLimiter: lim}))
	t.Cleanup(srv.Close)
	e := &env{t: t, st: st, url: srv.URL, logs: logs, responses: &logtest.Buffer{},
		tokens: map[string]string{}, as: map[string]*clients{}, ids: map[string]pgtype.UUID{}}
	root, err := auth.Bootstrap(ctx, st, cluster, false, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	e.tokens[cluster] = root
	e.tokens[badTok] = auth.TokenPrefix + "not-a-real-token"
	e.tokens[noToken] = ""
	e.as[cluster] = e.clients(root)
	for _, name := range []string{"a", "b"} {
		resp, err := e.as[cluster].tenants.CreateTenant(ctx, connect.NewRequest(&adminv1.CreateTenantRequest{Name: name}))
		if err != nil {
			t.Fatal(err)
		}
		id, _ := store.ParseUUID(resp.Msg.GetTenant().GetId())
		e.ids[name] = id
	}
	for name, b := range map[string]*adminv1.RoleBinding{
		tadmA: {Role: adminv1.Role_ROLE_TENANT_ADMIN, Tenant: "a"},
		padmA: {Role: adminv1.Role_ROLE_PROVIDER_ADMIN, Tenant: "a"},
		costA: {Role: adminv1.Role_ROLE_COST_OWNER, Tenant: "a"},
		tadmB: {Role: adminv1.Role_ROLE_TENANT_ADMIN, Tenant: "b"},
	} {
		e.tokens[name] = e.newAdmin(name, b)
	}
	for _, r := range []string{tadmA, padmA, costA, tadmB, noToken, badTok} {
		e.as[r] = e.clients(e.tokens[r])
	}
	return e
}

// newAdmin creates an admin with roles and returns a token for it.
func (e *env) newAdmin(name string, roles ...*adminv1.RoleBinding) string {
	e.t.Helper()
	ctx := context.Background()
	c := e.as[cluster]
	if _, err := c.admins.CreateAdmin(ctx, connect.NewRequest(&adminv1.CreateAdminRequest{Name: name, Roles: roles})); err != nil {
		e.t.Fatalf("create admin %s: %v", name, err)
	}
	tok, err := c.admins.CreateAdminToken(ctx, connect.NewRequest(&adminv1.CreateAdminTokenRequest{Admin: name}))
	if err != nil {
		e.t.Fatalf("token of %s: %v", name, err)
	}
	return tok.Msg.GetSecret()
}

func (e *env) clients(token string, opts ...connect.ClientOption) *clients {
	hc := &http.Client{Transport: &recorder{token: token, rt: http.DefaultTransport, out: e.responses}, Timeout: time.Minute}
	// No compression, so that the recorded bodies can be scanned as sent.
	opts = append([]connect.ClientOption{connect.WithAcceptCompression("gzip", nil, nil)}, opts...)
	return &clients{
		tenants: adminv1connect.NewTenantServiceClient(hc, e.url, opts...),
		keys:    adminv1connect.NewApiKeyServiceClient(hc, e.url, opts...),
		admins:  adminv1connect.NewAdminServiceClient(hc, e.url, opts...),
		secrets: adminv1connect.NewSecretServiceClient(hc, e.url, opts...),
		budgets: adminv1connect.NewBudgetServiceClient(hc, e.url, opts...),
		usage:   adminv1connect.NewUsageServiceClient(hc, e.url, opts...),
		calls:   adminv1connect.NewCallServiceClient(hc, e.url, opts...),
		edges:   adminv1connect.NewEdgeServiceClient(hc, e.url, opts...),
		doctor:  adminv1connect.NewDoctorServiceClient(hc, e.url, opts...),
		audit:   adminv1connect.NewAuditServiceClient(hc, e.url, opts...),
	}
}

// count returns the rows of table.
func (e *env) count(table string) int {
	e.t.Helper()
	var n int
	if err := e.st.Pool().QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// counts returns the rows of each table.
func (e *env) counts(tables ...string) map[string]int {
	e.t.Helper()
	out := map[string]int{}
	for _, t := range tables {
		out[t] = e.count(t)
	}
	return out
}

// insertCall stores a call of the tenant with one attempt, as usage ingest
// would.
func (e *env) insertCall(tenant, id string, start time.Time, cost int64) {
	e.t.Helper()
	ctx := context.Background()
	if _, err := e.st.Q.InsertCall(ctx, sqlc.InsertCallParams{
		CallID: id, TenantID: e.ids[tenant], EdgeID: "edge-1", Endpoint: "chat", Model: "gpt-x",
		RecordName: "gpt", MemberName: "eu1", Status: 200, Outcome: "answered",
		InputTokens: 10, OutputTokens: 20, CostNanos: cost, StartedAt: pgtype.Timestamptz{Time: start, Valid: true},
	}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.st.Q.InsertCallAttempt(ctx, sqlc.InsertCallAttemptParams{
		CallID: id, AttemptIndex: 0, RecordName: "gpt", MemberName: "eu1", Status: 200, Outcome: "answered", Kind: "none",
	}); err != nil {
		e.t.Fatal(err)
	}
}

func pgts(t time.Time) pgtype.Timestamptz { return pgtype.Timestamptz{Time: t, Valid: true} }

func sha(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }
