package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"connectrpc.com/connect"

	"weir.dev/proto/gen/weir/admin/v1/adminv1connect"
)

// clients holds one Connect client per admin service, all sending the same
// bearer token to the same base URL.
type clients struct {
	admins    adminv1connect.AdminServiceClient
	tenants   adminv1connect.TenantServiceClient
	keys      adminv1connect.ApiKeyServiceClient
	secrets   adminv1connect.SecretServiceClient
	providers adminv1connect.ProviderServiceClient
	pools     adminv1connect.PoolServiceClient
	budgets   adminv1connect.BudgetServiceClient
	usage     adminv1connect.UsageServiceClient
	calls     adminv1connect.CallServiceClient
	edges     adminv1connect.EdgeServiceClient
	doctor    adminv1connect.DoctorServiceClient
}

// newClients builds the clients for baseURL with token. The Connect protocol
// with the binary codec is used; it works over HTTP/1.1 and HTTP/2.
func newClients(httpClient connect.HTTPClient, baseURL, token string) *clients {
	baseURL = strings.TrimRight(baseURL, "/")
	opts := []connect.ClientOption{connect.WithInterceptors(bearer(token))}
	return &clients{
		admins:    adminv1connect.NewAdminServiceClient(httpClient, baseURL, opts...),
		tenants:   adminv1connect.NewTenantServiceClient(httpClient, baseURL, opts...),
		keys:      adminv1connect.NewApiKeyServiceClient(httpClient, baseURL, opts...),
		secrets:   adminv1connect.NewSecretServiceClient(httpClient, baseURL, opts...),
		providers: adminv1connect.NewProviderServiceClient(httpClient, baseURL, opts...),
		pools:     adminv1connect.NewPoolServiceClient(httpClient, baseURL, opts...),
		budgets:   adminv1connect.NewBudgetServiceClient(httpClient, baseURL, opts...),
		usage:     adminv1connect.NewUsageServiceClient(httpClient, baseURL, opts...),
		calls:     adminv1connect.NewCallServiceClient(httpClient, baseURL, opts...),
		edges:     adminv1connect.NewEdgeServiceClient(httpClient, baseURL, opts...),
		doctor:    adminv1connect.NewDoctorServiceClient(httpClient, baseURL, opts...),
	}
}

// checkURL accepts an absolute http or https URL of the admin API.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("invalid URL %q: want http(s)://host[:port][/path]", s)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("invalid URL %q: no query or fragment", s)
	}
	return nil
}

// bearer is a client interceptor that sends the admin token on every
// request, unary and streaming.
type bearer string

// WrapUnary implements connect.Interceptor.
func (b bearer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("Authorization", "Bearer "+string(b))
		req.Header().Set("User-Agent", userAgent)
		return next(ctx, req)
	}
}

// WrapStreamingClient implements connect.Interceptor.
func (b bearer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		conn.RequestHeader().Set("Authorization", "Bearer "+string(b))
		conn.RequestHeader().Set("User-Agent", userAgent)
		return conn
	}
}

// WrapStreamingHandler implements connect.Interceptor; it is a client-side
// interceptor only.
func (b bearer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// userAgent names the CLI to the server.
const userAgent = "weir-cli"

// defaultHTTPClient is the client used when the caller gives none: no
// overall timeout, since usage exports stream for as long as they need; the
// command's context bounds every call.
func defaultHTTPClient() *http.Client { return &http.Client{} }
