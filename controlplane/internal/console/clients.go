package console

import (
	"context"
	"net/http"

	"connectrpc.com/connect"

	"weir.dev/proto/gen/weir/admin/v1/adminv1connect"
)

// apiBase is the base URL of the in-process admin API; the host is never
// resolved.
const apiBase = "http://weir-admin-api.internal"

// Clients are the admin API's typed clients, authenticated as one session's
// admin. Everything the console shows or changes goes through them.
type Clients struct {
	Tenants   adminv1connect.TenantServiceClient
	Keys      adminv1connect.ApiKeyServiceClient
	Admins    adminv1connect.AdminServiceClient
	Secrets   adminv1connect.SecretServiceClient
	Budgets   adminv1connect.BudgetServiceClient
	Usage     adminv1connect.UsageServiceClient
	Calls     adminv1connect.CallServiceClient
	Edges     adminv1connect.EdgeServiceClient
	Doctor    adminv1connect.DoctorServiceClient
	Audit     adminv1connect.AuditServiceClient
	Providers adminv1connect.ProviderServiceClient
	Pools     adminv1connect.PoolServiceClient
	Prices    adminv1connect.PriceServiceClient
}

// newClients returns clients that call api in-process with token as the
// bearer.
func newClients(api http.Handler, token string) *Clients {
	hc := &http.Client{Transport: inProcess{h: api}}
	opts := []connect.ClientOption{connect.WithInterceptors(bearer(token))}
	return &Clients{
		Tenants:   adminv1connect.NewTenantServiceClient(hc, apiBase, opts...),
		Keys:      adminv1connect.NewApiKeyServiceClient(hc, apiBase, opts...),
		Admins:    adminv1connect.NewAdminServiceClient(hc, apiBase, opts...),
		Secrets:   adminv1connect.NewSecretServiceClient(hc, apiBase, opts...),
		Budgets:   adminv1connect.NewBudgetServiceClient(hc, apiBase, opts...),
		Usage:     adminv1connect.NewUsageServiceClient(hc, apiBase, opts...),
		Calls:     adminv1connect.NewCallServiceClient(hc, apiBase, opts...),
		Edges:     adminv1connect.NewEdgeServiceClient(hc, apiBase, opts...),
		Doctor:    adminv1connect.NewDoctorServiceClient(hc, apiBase, opts...),
		Audit:     adminv1connect.NewAuditServiceClient(hc, apiBase, opts...),
		Providers: adminv1connect.NewProviderServiceClient(hc, apiBase, opts...),
		Pools:     adminv1connect.NewPoolServiceClient(hc, apiBase, opts...),
		Prices:    adminv1connect.NewPriceServiceClient(hc, apiBase, opts...),
	}
}

// bearer sends the admin token on every call, unary and streaming.
type bearer string

func (b bearer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("Authorization", "Bearer "+string(b))
		return next(ctx, req)
	}
}

func (b bearer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		conn.RequestHeader().Set("Authorization", "Bearer "+string(b))
		return conn
	}
}

func (b bearer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
