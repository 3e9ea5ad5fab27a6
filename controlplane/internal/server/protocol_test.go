package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"
	"google.golang.org/protobuf/reflect/protoreflect"

	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/secretbox"
	"weir.dev/controlplane/internal/server"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/pgtest"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/proto/gen/weir/admin/v1/adminv1connect"
)

type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

// TestOnePortAllProtocols serves the handler with Serve on a loopback port
// and calls it with gRPC (cleartext HTTP/2), gRPC-Web and Connect (JSON and
// proto over HTTP/1.1); health checking and reflection answer there too, and
// the server shuts down when its context ends.
func TestOnePortAllProtocols(t *testing.T) {
	t.Parallel()
	st := store.New(pgtest.New(t))
	box, _ := secretbox.NewBox(bytes.Repeat([]byte{1}, 32), nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- server.Serve(ctx, ln, server.Handler(server.Deps{Store: st, Box: box}), slog.New(slog.DiscardHandler), 5*time.Second)
	}()
	token, err := auth.Bootstrap(context.Background(), st, "root", false, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	var h2c http.Protocols
	h2c.SetUnencryptedHTTP2(true)
	h2 := &http.Client{Transport: bearer{token, &http.Transport{Protocols: &h2c}}}
	h1 := &http.Client{Transport: bearer{token, http.DefaultTransport}}

	for name, cl := range map[string]adminv1connect.AdminServiceClient{
		"grpc":          adminv1connect.NewAdminServiceClient(h2, url, connect.WithGRPC()),
		"grpc-web":      adminv1connect.NewAdminServiceClient(h1, url, connect.WithGRPCWeb()),
		"connect json":  adminv1connect.NewAdminServiceClient(h1, url, connect.WithProtoJSON()),
		"connect proto": adminv1connect.NewAdminServiceClient(h1, url),
	} {
		resp, err := cl.WhoAmI(context.Background(), connect.NewRequest(&adminv1.WhoAmIRequest{}))
		if err != nil {
			t.Errorf("%s: WhoAmI: %v", name, err)
			continue
		}
		if resp.Msg.GetAdmin().GetName() != "root" {
			t.Errorf("%s: WhoAmI = %v", name, resp.Msg.GetAdmin())
		}
	}

	health := grpchealth.NewClient(h2, url, connect.WithGRPC())
	res, err := health.Check(context.Background(), &grpchealth.CheckRequest{Service: adminv1connect.SecretServiceName})
	if err != nil || res.Status != grpchealth.StatusServing {
		t.Errorf("health = %v, %v", res, err)
	}
	stream := grpcreflect.NewClient(h2, url, connect.WithGRPC()).NewStream(context.Background())
	names, err := stream.ListServices()
	_, _ = stream.Close()
	if err != nil {
		t.Fatalf("reflection: %v", err)
	}
	for _, want := range []string{adminv1connect.TenantServiceName, adminv1connect.ProviderServiceName, adminv1connect.AuditServiceName} {
		if !slices.ContainsFunc(names, func(n protoreflect.FullName) bool { return string(n) == want }) {
			t.Errorf("reflection lists %v; %s missing", names, want)
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve after cancel = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
}
