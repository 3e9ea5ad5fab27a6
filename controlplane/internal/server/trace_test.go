package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/secretbox"
	"weir.dev/controlplane/internal/server"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/pgtest"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/proto/gen/weir/admin/v1/adminv1connect"
	"weir.dev/tracing"
	"weir.dev/tracing/tracingtest"
)

// TestAdminRPCsAreTraced: with an OTLP endpoint in the environment, each
// admin RPC is a server span at the receiver, with its procedure and its
// code, and no token or argument is in any attribute. (A request refused
// for its token never reaches the RPC: it is no span.)
func TestAdminRPCsAreTraced(t *testing.T) {
	recv := tracingtest.NewReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL())
	t.Setenv("OTEL_SERVICE_NAME", "")
	ctx := context.Background()
	traces, err := tracing.Start(ctx, "weir-controlplane", os.Getenv)
	if err != nil || !traces.Enabled() {
		t.Fatalf("tracing.Start: %v", err)
	}
	st := store.New(pgtest.New(t))
	box, err := secretbox.NewBox(bytes.Repeat([]byte{42}, secretbox.KeySize), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.Handler(server.Deps{Store: st, Box: box, TracerProvider: traces.TracerProvider()}))
	t.Cleanup(srv.Close)
	root, err := auth.Bootstrap(ctx, st, "root", false, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tenants := func(token string) adminv1connect.TenantServiceClient {
		return adminv1connect.NewTenantServiceClient(&http.Client{Transport: bearer{token, http.DefaultTransport}}, srv.URL)
	}
	if _, err := tenants(root).ListTenants(ctx, connect.NewRequest(&adminv1.ListTenantsRequest{})); err != nil {
		t.Fatal(err)
	}
	const badName = "Not A Valid Name"
	if _, err := tenants(root).CreateTenant(ctx, connect.NewRequest(&adminv1.CreateTenantRequest{Name: badName})); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("CreateTenant %q: %v, want invalid argument", badName, err)
	}
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := traces.Close(fctx); err != nil {
		t.Fatal(err)
	}
	codes := map[string]any{}
	for _, s := range recv.Spans() {
		for k, v := range s.Attrs() {
			if str, isStr := v.(string); isStr && (strings.Contains(str, root) || strings.Contains(str, badName)) {
				t.Errorf("span %s attribute %s holds a token or an argument", s.Name, k)
			}
		}
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER && s.Service == "weir-controlplane" {
			codes[s.Name] = s.Attrs()["rpc.response.status_code"]
		}
	}
	want := map[string]any{"weir.admin.v1.TenantService/ListTenants": "OK", "weir.admin.v1.TenantService/CreateTenant": "INVALID_ARGUMENT"}
	for name, code := range want {
		if codes[name] != code {
			t.Errorf("server span %s with code %v, want %v; received %v", name, codes[name], code, recv.Spans())
		}
	}
}
