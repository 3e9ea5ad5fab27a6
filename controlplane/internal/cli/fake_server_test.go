package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/proto/gen/weir/admin/v1/adminv1connect"
)

// testFakeAdmin is a TEST FAKE of the admin API, not the control plane: it
// implements the adminv1connect handler interfaces the CLI calls, records
// every request, and answers with scripted replies (an empty response when
// none is scripted). It exists to test the CLI's request building and output
// formatting over real Connect and HTTP; the behaviour of the real server is
// tested against the real server (see the e2e test).
type testFakeAdmin struct {
	adminv1connect.UnimplementedAdminServiceHandler
	adminv1connect.UnimplementedTenantServiceHandler
	adminv1connect.UnimplementedApiKeyServiceHandler
	adminv1connect.UnimplementedSecretServiceHandler
	adminv1connect.UnimplementedProviderServiceHandler
	adminv1connect.UnimplementedPoolServiceHandler
	adminv1connect.UnimplementedBudgetServiceHandler
	adminv1connect.UnimplementedUsageServiceHandler
	adminv1connect.UnimplementedCallServiceHandler
	adminv1connect.UnimplementedEdgeServiceHandler
	adminv1connect.UnimplementedDoctorServiceHandler

	mu      sync.Mutex
	reqs    []fakeRequest
	replies map[string]func(req proto.Message) (proto.Message, error)
	// usage is what ExportUsage streams, one response per batch, then
	// usageErr if set.
	usage    [][]*adminv1.UsageRow
	usageErr error
}

// fakeRequest is one request the fake received.
type fakeRequest struct {
	procedure string
	auth      string
	msg       proto.Message
}

// reply scripts the answer of the RPC with that method name (e.g.
// "AddPoolMember"): fn gets the request and returns the response or an
// error.
func (f *testFakeAdmin) reply(method string, fn func(req proto.Message) (proto.Message, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.replies == nil {
		f.replies = map[string]func(proto.Message) (proto.Message, error){}
	}
	f.replies[method] = fn
}

// requests returns the requests received so far.
func (f *testFakeAdmin) requests() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.reqs...)
}

// last returns the last request to the method, failing the test when there
// is none.
func (f *testFakeAdmin) last(t *testing.T, method string) proto.Message {
	t.Helper()
	reqs := f.requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if strings.HasSuffix(reqs[i].procedure, "/"+method) {
			return reqs[i].msg
		}
	}
	t.Fatalf("no %s request; got %v", method, procedures(reqs))
	return nil
}

// procedures lists the procedures of reqs.
func procedures(reqs []fakeRequest) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.procedure)
	}
	return out
}

// fakeUnary records a unary request and answers it.
func fakeUnary[Req, Res any](f *testFakeAdmin, r *connect.Request[Req]) (*connect.Response[Res], error) {
	msg := any(r.Msg).(proto.Message)
	proc := r.Spec().Procedure
	f.mu.Lock()
	f.reqs = append(f.reqs, fakeRequest{procedure: proc, auth: r.Header().Get("Authorization"), msg: proto.Clone(msg)})
	fn := f.replies[proc[strings.LastIndex(proc, "/")+1:]]
	f.mu.Unlock()
	res := new(Res)
	if fn != nil {
		out, err := fn(msg)
		if err != nil {
			return nil, err
		}
		if out != nil {
			res = any(out).(*Res)
		}
	}
	return connect.NewResponse(res), nil
}

func (f *testFakeAdmin) WhoAmI(ctx context.Context, r *connect.Request[adminv1.WhoAmIRequest]) (*connect.Response[adminv1.WhoAmIResponse], error) {
	return fakeUnary[adminv1.WhoAmIRequest, adminv1.WhoAmIResponse](f, r)
}

func (f *testFakeAdmin) CreateTenant(ctx context.Context, r *connect.Request[adminv1.CreateTenantRequest]) (*connect.Response[adminv1.CreateTenantResponse], error) {
	return fakeUnary[adminv1.CreateTenantRequest, adminv1.CreateTenantResponse](f, r)
}

func (f *testFakeAdmin) ListTenants(ctx context.Context, r *connect.Request[adminv1.ListTenantsRequest]) (*connect.Response[adminv1.ListTenantsResponse], error) {
	return fakeUnary[adminv1.ListTenantsRequest, adminv1.ListTenantsResponse](f, r)
}

func (f *testFakeAdmin) GetTenant(ctx context.Context, r *connect.Request[adminv1.GetTenantRequest]) (*connect.Response[adminv1.GetTenantResponse], error) {
	return fakeUnary[adminv1.GetTenantRequest, adminv1.GetTenantResponse](f, r)
}

func (f *testFakeAdmin) SetDataRules(ctx context.Context, r *connect.Request[adminv1.SetDataRulesRequest]) (*connect.Response[adminv1.SetDataRulesResponse], error) {
	return fakeUnary[adminv1.SetDataRulesRequest, adminv1.SetDataRulesResponse](f, r)
}

func (f *testFakeAdmin) CreateApiKey(ctx context.Context, r *connect.Request[adminv1.CreateApiKeyRequest]) (*connect.Response[adminv1.CreateApiKeyResponse], error) {
	return fakeUnary[adminv1.CreateApiKeyRequest, adminv1.CreateApiKeyResponse](f, r)
}

func (f *testFakeAdmin) ListApiKeys(ctx context.Context, r *connect.Request[adminv1.ListApiKeysRequest]) (*connect.Response[adminv1.ListApiKeysResponse], error) {
	return fakeUnary[adminv1.ListApiKeysRequest, adminv1.ListApiKeysResponse](f, r)
}

func (f *testFakeAdmin) RevokeApiKey(ctx context.Context, r *connect.Request[adminv1.RevokeApiKeyRequest]) (*connect.Response[adminv1.RevokeApiKeyResponse], error) {
	return fakeUnary[adminv1.RevokeApiKeyRequest, adminv1.RevokeApiKeyResponse](f, r)
}

func (f *testFakeAdmin) SetSecret(ctx context.Context, r *connect.Request[adminv1.SetSecretRequest]) (*connect.Response[adminv1.SetSecretResponse], error) {
	return fakeUnary[adminv1.SetSecretRequest, adminv1.SetSecretResponse](f, r)
}

func (f *testFakeAdmin) ListSecrets(ctx context.Context, r *connect.Request[adminv1.ListSecretsRequest]) (*connect.Response[adminv1.ListSecretsResponse], error) {
	return fakeUnary[adminv1.ListSecretsRequest, adminv1.ListSecretsResponse](f, r)
}

func (f *testFakeAdmin) DeleteSecret(ctx context.Context, r *connect.Request[adminv1.DeleteSecretRequest]) (*connect.Response[adminv1.DeleteSecretResponse], error) {
	return fakeUnary[adminv1.DeleteSecretRequest, adminv1.DeleteSecretResponse](f, r)
}

func (f *testFakeAdmin) CreateProvider(ctx context.Context, r *connect.Request[adminv1.CreateProviderRequest]) (*connect.Response[adminv1.CreateProviderResponse], error) {
	return fakeUnary[adminv1.CreateProviderRequest, adminv1.CreateProviderResponse](f, r)
}

func (f *testFakeAdmin) UpdateProvider(ctx context.Context, r *connect.Request[adminv1.UpdateProviderRequest]) (*connect.Response[adminv1.UpdateProviderResponse], error) {
	return fakeUnary[adminv1.UpdateProviderRequest, adminv1.UpdateProviderResponse](f, r)
}

func (f *testFakeAdmin) GetProvider(ctx context.Context, r *connect.Request[adminv1.GetProviderRequest]) (*connect.Response[adminv1.GetProviderResponse], error) {
	return fakeUnary[adminv1.GetProviderRequest, adminv1.GetProviderResponse](f, r)
}

func (f *testFakeAdmin) ListProviders(ctx context.Context, r *connect.Request[adminv1.ListProvidersRequest]) (*connect.Response[adminv1.ListProvidersResponse], error) {
	return fakeUnary[adminv1.ListProvidersRequest, adminv1.ListProvidersResponse](f, r)
}

func (f *testFakeAdmin) DeleteProvider(ctx context.Context, r *connect.Request[adminv1.DeleteProviderRequest]) (*connect.Response[adminv1.DeleteProviderResponse], error) {
	return fakeUnary[adminv1.DeleteProviderRequest, adminv1.DeleteProviderResponse](f, r)
}

func (f *testFakeAdmin) ShareProvider(ctx context.Context, r *connect.Request[adminv1.ShareProviderRequest]) (*connect.Response[adminv1.ShareProviderResponse], error) {
	return fakeUnary[adminv1.ShareProviderRequest, adminv1.ShareProviderResponse](f, r)
}

func (f *testFakeAdmin) UnshareProvider(ctx context.Context, r *connect.Request[adminv1.UnshareProviderRequest]) (*connect.Response[adminv1.UnshareProviderResponse], error) {
	return fakeUnary[adminv1.UnshareProviderRequest, adminv1.UnshareProviderResponse](f, r)
}

func (f *testFakeAdmin) AddPoolMember(ctx context.Context, r *connect.Request[adminv1.AddPoolMemberRequest]) (*connect.Response[adminv1.AddPoolMemberResponse], error) {
	return fakeUnary[adminv1.AddPoolMemberRequest, adminv1.AddPoolMemberResponse](f, r)
}

func (f *testFakeAdmin) UpdatePoolMember(ctx context.Context, r *connect.Request[adminv1.UpdatePoolMemberRequest]) (*connect.Response[adminv1.UpdatePoolMemberResponse], error) {
	return fakeUnary[adminv1.UpdatePoolMemberRequest, adminv1.UpdatePoolMemberResponse](f, r)
}

func (f *testFakeAdmin) RemovePoolMember(ctx context.Context, r *connect.Request[adminv1.RemovePoolMemberRequest]) (*connect.Response[adminv1.RemovePoolMemberResponse], error) {
	return fakeUnary[adminv1.RemovePoolMemberRequest, adminv1.RemovePoolMemberResponse](f, r)
}

func (f *testFakeAdmin) ListPoolMembers(ctx context.Context, r *connect.Request[adminv1.ListPoolMembersRequest]) (*connect.Response[adminv1.ListPoolMembersResponse], error) {
	return fakeUnary[adminv1.ListPoolMembersRequest, adminv1.ListPoolMembersResponse](f, r)
}

func (f *testFakeAdmin) ResetPoolMember(ctx context.Context, r *connect.Request[adminv1.ResetPoolMemberRequest]) (*connect.Response[adminv1.ResetPoolMemberResponse], error) {
	return fakeUnary[adminv1.ResetPoolMemberRequest, adminv1.ResetPoolMemberResponse](f, r)
}

func (f *testFakeAdmin) SetBudget(ctx context.Context, r *connect.Request[adminv1.SetBudgetRequest]) (*connect.Response[adminv1.SetBudgetResponse], error) {
	return fakeUnary[adminv1.SetBudgetRequest, adminv1.SetBudgetResponse](f, r)
}

func (f *testFakeAdmin) ListBudgets(ctx context.Context, r *connect.Request[adminv1.ListBudgetsRequest]) (*connect.Response[adminv1.ListBudgetsResponse], error) {
	return fakeUnary[adminv1.ListBudgetsRequest, adminv1.ListBudgetsResponse](f, r)
}

func (f *testFakeAdmin) DeleteBudget(ctx context.Context, r *connect.Request[adminv1.DeleteBudgetRequest]) (*connect.Response[adminv1.DeleteBudgetResponse], error) {
	return fakeUnary[adminv1.DeleteBudgetRequest, adminv1.DeleteBudgetResponse](f, r)
}

func (f *testFakeAdmin) ListCalls(ctx context.Context, r *connect.Request[adminv1.ListCallsRequest]) (*connect.Response[adminv1.ListCallsResponse], error) {
	return fakeUnary[adminv1.ListCallsRequest, adminv1.ListCallsResponse](f, r)
}

func (f *testFakeAdmin) GetCall(ctx context.Context, r *connect.Request[adminv1.GetCallRequest]) (*connect.Response[adminv1.GetCallResponse], error) {
	return fakeUnary[adminv1.GetCallRequest, adminv1.GetCallResponse](f, r)
}

func (f *testFakeAdmin) ListEdges(ctx context.Context, r *connect.Request[adminv1.ListEdgesRequest]) (*connect.Response[adminv1.ListEdgesResponse], error) {
	return fakeUnary[adminv1.ListEdgesRequest, adminv1.ListEdgesResponse](f, r)
}

func (f *testFakeAdmin) Diagnose(ctx context.Context, r *connect.Request[adminv1.DiagnoseRequest]) (*connect.Response[adminv1.DiagnoseResponse], error) {
	return fakeUnary[adminv1.DiagnoseRequest, adminv1.DiagnoseResponse](f, r)
}

// ExportUsage streams f.usage, one response per batch, then fails with
// f.usageErr when set.
func (f *testFakeAdmin) ExportUsage(ctx context.Context, r *connect.Request[adminv1.ExportUsageRequest], s *connect.ServerStream[adminv1.ExportUsageResponse]) error {
	f.mu.Lock()
	f.reqs = append(f.reqs, fakeRequest{procedure: r.Spec().Procedure, auth: r.Header().Get("Authorization"), msg: proto.Clone(r.Msg)})
	batches, failure := f.usage, f.usageErr
	f.mu.Unlock()
	for _, b := range batches {
		if err := s.Send(&adminv1.ExportUsageResponse{Rows: b}); err != nil {
			return err
		}
	}
	return failure
}

// startFake serves a testFakeAdmin on a loopback httptest server and returns
// it with its URL.
func startFake(t *testing.T) (*testFakeAdmin, string) {
	t.Helper()
	f := &testFakeAdmin{}
	mux := http.NewServeMux()
	mux.Handle(adminv1connect.NewAdminServiceHandler(f))
	mux.Handle(adminv1connect.NewTenantServiceHandler(f))
	mux.Handle(adminv1connect.NewApiKeyServiceHandler(f))
	mux.Handle(adminv1connect.NewSecretServiceHandler(f))
	mux.Handle(adminv1connect.NewProviderServiceHandler(f))
	mux.Handle(adminv1connect.NewPoolServiceHandler(f))
	mux.Handle(adminv1connect.NewBudgetServiceHandler(f))
	mux.Handle(adminv1connect.NewUsageServiceHandler(f))
	mux.Handle(adminv1connect.NewCallServiceHandler(f))
	mux.Handle(adminv1connect.NewEdgeServiceHandler(f))
	mux.Handle(adminv1connect.NewDoctorServiceHandler(f))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

// result is what one CLI run produced.
type result struct {
	code           int
	stdout, stderr string
}

// env is a test environment for CLI runs: a private config directory and
// optionally WEIR_URL / WEIR_TOKEN.
type env map[string]string

// newEnv returns an environment with a fresh config directory, pointing at
// url with token when url is not empty.
func newEnv(t *testing.T, url, token string) env {
	e := env{"WEIR_CONFIG_DIR": t.TempDir()}
	if url != "" {
		e["WEIR_URL"], e["WEIR_TOKEN"] = url, token
	}
	return e
}

// run runs the CLI with args and stdin (nil: an empty reader).
func (e env) run(t *testing.T, stdin io.Reader, args ...string) result {
	t.Helper()
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	var out, errOut bytes.Buffer
	code := Run(context.Background(), args, func(k string) string { return e[k] }, stdin, &out, &errOut)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// must runs the CLI and fails the test unless it exits 0.
func (e env) must(t *testing.T, args ...string) result {
	t.Helper()
	r := e.run(t, nil, args...)
	if r.code != 0 {
		t.Fatalf("weir %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}
