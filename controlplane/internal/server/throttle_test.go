package server_test

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/secretbox"
	"weir.dev/controlplane/internal/server"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/pgtest"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/proto/gen/weir/admin/v1/adminv1connect"
)

// fromAddr is an HTTP client whose connections come from local IP src (any
// of 127.0.0.0/8 on loopback) and that sends token as the bearer.
func fromAddr(src, token string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext}
	return &http.Client{Transport: bearer{token: token, rt: tr}, Timeout: 30 * time.Second}
}

// TestBadTokensAreSlowedPerAddress sends 300 bad admin tokens from one
// address over loopback: after the first few, they are refused at once with
// ResourceExhausted (HTTP 429, Retry-After) without being checked, while a
// valid token, and a bad one, from another address are answered as usual.
func TestBadTokensAreSlowedPerAddress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(pgtest.New(t))
	box, err := secretbox.NewBox(make([]byte, secretbox.KeySize), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.Handler(server.Deps{Store: st, Box: box}))
	t.Cleanup(srv.Close)
	token, err := auth.Bootstrap(ctx, st, "root", false, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	who := func(c *http.Client) error {
		_, err := adminv1connect.NewAdminServiceClient(c, srv.URL).WhoAmI(ctx, connect.NewRequest(&adminv1.WhoAmIRequest{}))
		return err
	}

	bad := fromAddr("127.0.0.1", auth.TokenPrefix+"not-a-real-token")
	start := time.Now()
	var throttled, unauth int
	for range 300 {
		err := who(bad)
		switch connect.CodeOf(err) {
		case connect.CodeResourceExhausted:
			throttled++
			var ce *connect.Error
			if errors.As(err, &ce) {
				if s, _ := strconv.Atoi(ce.Meta().Get("Retry-After")); s < 1 {
					t.Fatalf("Retry-After %q", ce.Meta().Get("Retry-After"))
				}
			}
		case connect.CodeUnauthenticated:
			unauth++
		default:
			t.Fatalf("bad token: %v", err)
		}
	}
	elapsed := time.Since(start)
	// 5 free failures, then one per second of the run.
	if limit := 5 + int(elapsed/time.Second) + 1; unauth > limit || throttled < 300-limit {
		t.Errorf("in %v: %d checked and refused, %d throttled; want at most %d checked", elapsed, unauth, throttled, limit)
	}
	if err := who(fromAddr("127.0.0.1", token)); connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Errorf("valid token from the throttled address = %v, want ResourceExhausted", err)
	}
	raw, err := fromAddr("127.0.0.1", "x").Post(srv.URL+"/weir.admin.v1.AdminService/WhoAmI", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	raw.Body.Close()
	if raw.StatusCode != http.StatusTooManyRequests || raw.Header.Get("Retry-After") == "" {
		t.Errorf("plain HTTP from the throttled address: %d, Retry-After %q; want 429 with Retry-After", raw.StatusCode, raw.Header.Get("Retry-After"))
	}

	if err := who(fromAddr("127.0.0.2", token)); err != nil {
		t.Errorf("valid token from another address: %v", err)
	}
	if err := who(fromAddr("127.0.0.2", "wrong")); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("bad token from another address = %v, want Unauthenticated", err)
	}
}
