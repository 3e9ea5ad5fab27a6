package provider

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"
	"google.golang.org/protobuf/types/known/durationpb"

	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/pgtest"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/proto/gen/weir/admin/v1/adminv1connect"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

// harness is a real Postgres database (pgtest), the three services mounted
// behind the real auth interceptor on a loopback server, and admins with
// bearer tokens:
//
//	root   cluster admin
//	alice  tenant admin of "acme"
//	paul   provider admin of "acme"
//	cora   cost owner of "acme"
//	bob    tenant admin of "beta"
type harness struct {
	t       *testing.T
	st      *store.Store
	url     string
	tenants map[string]sqlc.Tenant
	tokens  map[string]string
	resets  *fakeResetter
	now     time.Time
}

// fakeResetter records the commands it is given.
type fakeResetter struct {
	mu   sync.Mutex
	cmds []*telemetryv1.Command
	fail bool
}

func (f *fakeResetter) ResetMember(_ context.Context, cmd *telemetryv1.Command) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return errors.New("nats down")
	}
	f.cmds = append(f.cmds, cmd)
	return nil
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	ctx := context.Background()
	st := store.New(pgtest.New(t))
	h := &harness{t: t, st: st, tenants: map[string]sqlc.Tenant{}, tokens: map[string]string{}, resets: &fakeResetter{},
		now: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	for _, name := range []string{"acme", "beta"} {
		tn, err := st.Q.CreateTenant(ctx, sqlc.CreateTenantParams{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		h.tenants[name] = tn
	}
	for _, a := range []struct {
		name, role, tenant string
	}{
		{"root", "cluster_admin", ""},
		{"alice", "tenant_admin", "acme"},
		{"paul", "provider_admin", "acme"},
		{"cora", "cost_owner", "acme"},
		{"bob", "tenant_admin", "beta"},
	} {
		admin, err := st.Q.CreateAdmin(ctx, sqlc.CreateAdminParams{Name: a.name})
		if err != nil {
			t.Fatal(err)
		}
		var tenant pgtype.UUID
		if a.tenant != "" {
			tenant = h.tenants[a.tenant].ID
		}
		if _, err := st.Q.GrantRole(ctx, sqlc.GrantRoleParams{AdminID: admin.ID, Role: a.role, TenantID: tenant}); err != nil {
			t.Fatal(err)
		}
		token, sum, err := auth.NewToken(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Q.CreateAdminToken(ctx, sqlc.CreateAdminTokenParams{AdminID: admin.ID, Label: "test", SHA256: sum}); err != nil {
			t.Fatal(err)
		}
		h.tokens[a.name] = token
	}
	mux := http.NewServeMux()
	Register(mux, Deps{Store: st, Resetter: h.resets, Now: func() time.Time { return h.now }},
		connect.WithInterceptors(auth.NewInterceptor(st.Q, slog.New(slog.DiscardHandler))))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// secret stores a secret (a dummy ciphertext: these services never read
// values) of the tenant ("" = the cluster) bound to hosts.
func (h *harness) secret(tenant, name string, hosts ...string) {
	h.t.Helper()
	var owner pgtype.UUID
	if tenant != "" {
		owner = h.tenants[tenant].ID
	}
	if _, err := h.st.Q.SetSecret(context.Background(), sqlc.SetSecretParams{
		TenantID: owner, Name: name, Ciphertext: []byte("sealed"), Nonce: make([]byte, 12), KeyVersion: 1, Hosts: hosts,
	}); err != nil {
		h.t.Fatal(err)
	}
}

// bearer adds an admin token to every request of a client.
type bearer string

func (b bearer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("Authorization", "Bearer "+string(b))
		return next(ctx, req)
	}
}
func (b bearer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}
func (b bearer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// clients are the three services' clients as one admin.
type clients struct {
	providers adminv1connect.ProviderServiceClient
	pools     adminv1connect.PoolServiceClient
	prices    adminv1connect.PriceServiceClient
}

func (h *harness) as(admin string) clients {
	opt := connect.WithInterceptors(bearer(h.tokens[admin]))
	return clients{
		providers: adminv1connect.NewProviderServiceClient(http.DefaultClient, h.url, opt),
		pools:     adminv1connect.NewPoolServiceClient(http.DefaultClient, h.url, opt),
		prices:    adminv1connect.NewPriceServiceClient(http.DefaultClient, h.url, opt),
	}
}

// counts are the rows of every table a change of these services writes.
type counts struct {
	Records, Models, Members, RecordPrices, MemberPrices, Shares, Audit, Outbox int
}

func (h *harness) counts() counts {
	h.t.Helper()
	n := func(table string) int {
		var c int
		if err := h.st.Pool().QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&c); err != nil {
			h.t.Fatal(err)
		}
		return c
	}
	return counts{
		Records: n("provider_records"), Models: n("record_models"), Members: n("pool_members"),
		RecordPrices: n("record_prices"), MemberPrices: n("member_prices"), Shares: n("record_shares"),
		Audit: n("audit_log"), Outbox: n("outbox"),
	}
}

// mustOK returns the message of a response, failing the test on an error:
// mustOK(client.Call(ctx, req))(t).
func mustOK[T any](resp *connect.Response[T], err error) func(t *testing.T) *T {
	return func(t *testing.T) *T {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v (problems: %v)", err, problemsOf(err))
		}
		return resp.Msg
	}
}

// wantCode checks the Connect code of an error.
func wantCode(t *testing.T, err error, code connect.Code) {
	t.Helper()
	if connect.CodeOf(err) != code {
		t.Fatalf("error = %v (code %v), want %v", err, connect.CodeOf(err), code)
	}
}

// problemsOf returns the (field, code) pairs of an InvalidArgument error's
// ValidationError detail.
func problemsOf(err error) []fc {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return nil
	}
	var out []fc
	for _, d := range ce.Details() {
		v, err := d.Value()
		if err != nil {
			continue
		}
		if ve, ok := v.(*adminv1.ValidationError); ok {
			for _, p := range ve.GetProblems() {
				out = append(out, fc{p.GetField(), p.GetCode()})
			}
		}
	}
	return out
}

func req[T any](m *T) *connect.Request[T] { return connect.NewRequest(m) }

// adminv1connectNoAuth is a ProviderService client that sends no token.
func adminv1connectNoAuth(h *harness) adminv1connect.ProviderServiceClient {
	return adminv1connect.NewProviderServiceClient(http.DefaultClient, h.url)
}

func durationpbNeg() *durationpb.Duration { return durationpb.New(-time.Second) }
