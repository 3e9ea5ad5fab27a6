package natsauth_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"weir.dev/controlplane/internal/distrib"
	"weir.dev/controlplane/internal/natsauth"
	"weir.dev/controlplane/internal/natsembed"
	"weir.dev/routing/natsnames"
)

// authServer is an embedded server with the users of two edges, and the
// buckets and the stream set up by the control plane's user.
func authServer(t *testing.T) (*natsembed.Server, natsauth.Users) {
	t.Helper()
	users, err := natsauth.Ensure(t.TempDir(), []string{"edge-1", "edge-2"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := natsembed.Start(natsembed.Options{StoreDir: t.TempDir(), Users: users.ServerUsers()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	cp := dial(t, s, nats.UserInfo(natsauth.ControlPlaneUser, users.ControlPlane))
	js, err := jetstream.New(cp)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := distrib.Setup(ctx, js, 1); err != nil {
		t.Fatalf("the control plane's user cannot set up: %v", err)
	}
	return s, users
}

func dial(t *testing.T, s *natsembed.Server, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Regression (issue 12): anyone who could reach NATS could connect. Now a
// client without credentials, or with a wrong password, is refused.
func TestUnauthenticatedRefused(t *testing.T) {
	t.Parallel()
	s, users := authServer(t)
	if nc, err := nats.Connect(s.ClientURL()); err == nil {
		nc.Close()
		t.Fatal("a client without credentials connected")
	}
	if nc, err := nats.Connect(s.ClientURL(), nats.UserInfo("edge-1", users.ControlPlane)); err == nil {
		nc.Close()
		t.Fatal("a client with a wrong password connected")
	}
}

// Regression (issue 12): any client could write config, create streams,
// write other edges' views, read every tenant's usage. An edge's user may
// do what an edge does and nothing more.
func TestEdgePermissions(t *testing.T) {
	t.Parallel()
	s, users := authServer(t)
	errs := make(chan error, 64)
	edge := dial(t, s, nats.UserInfo("edge-1", users.Edges["edge-1"]),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	js, err := jetstream.New(edge)
	if err != nil {
		t.Fatal(err)
	}
	ctx := func() context.Context {
		c, cancel := context.WithTimeout(context.Background(), time.Second)
		t.Cleanup(cancel)
		return c
	}

	// Allowed: what an edge does.
	views, err := js.KeyValue(ctx(), natsnames.ViewsBucket)
	if err != nil {
		t.Fatalf("open %s: %v", natsnames.ViewsBucket, err)
	}
	if _, err := views.Put(ctx(), "t.r.m.edge-1", []byte("v")); err != nil {
		t.Errorf("put own view: %v", err)
	}
	aff, err := js.KeyValue(ctx(), natsnames.AffinityBucket)
	if err != nil {
		t.Fatalf("open %s: %v", natsnames.AffinityBucket, err)
	}
	if _, err := aff.Put(ctx(), "t.job", []byte("m")); err != nil {
		t.Errorf("put affinity: %v", err)
	}
	if e, err := aff.Get(ctx(), "t.job"); err != nil || string(e.Value()) != "m" {
		t.Errorf("get affinity: %v", err)
	}
	if _, err := js.Publish(ctx(), natsnames.UsageSubjectPrefix+"t", []byte("record")); err != nil {
		t.Errorf("publish usage: %v", err)
	}
	cfg, err := js.KeyValue(ctx(), natsnames.ConfigBucket)
	if err != nil {
		t.Fatalf("open %s: %v", natsnames.ConfigBucket, err)
	}
	w, err := cfg.WatchAll(ctx())
	if err != nil {
		t.Fatalf("watch config: %v", err)
	}
	select {
	case <-w.Updates():
	case <-time.After(2 * time.Second):
		t.Error("config watch delivered nothing")
	}
	_ = w.Stop()
	// Every edge reads the views, to count live edges (R-HEAD-7).
	vw, err := views.WatchAll(ctx())
	if err != nil {
		t.Fatalf("watch views: %v", err)
	}
	select {
	case e := <-vw.Updates():
		if e == nil || e.Key() != "t.r.m.edge-1" {
			t.Errorf("views watch delivered %v", e)
		}
	case <-time.After(2 * time.Second):
		t.Error("views watch delivered nothing")
	}
	_ = vw.Stop()
	if _, err := edge.SubscribeSync("weir.cmd.>"); err != nil {
		t.Errorf("subscribe to commands: %v", err)
	}
	// Its own lease subject (nobody answers here: no responders, not a
	// permission error).
	if _, err := edge.Request(natsnames.LeaseSubject+".edge-1", []byte("x"), 200*time.Millisecond); err != nil && !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("request on its own lease subject: %v", err)
	}
	if err := edge.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		t.Fatalf("an allowed operation was refused: %v", err)
	default:
	}

	// Refused: everything else an attacker with an edge's credentials would
	// try.
	if _, err := cfg.Put(ctx(), "tenant.x", []byte("forged")); err == nil {
		t.Error("an edge put into WEIR_CONFIG")
	}
	if err := cfg.Delete(ctx(), "cluster"); err == nil {
		t.Error("an edge deleted from WEIR_CONFIG")
	}
	if _, err := views.Put(ctx(), "t.r.m.edge-2", []byte("v")); err == nil {
		t.Error("an edge wrote another edge's view")
	}
	if _, err := js.CreateStream(ctx(), jetstream.StreamConfig{Name: "EVIL", Subjects: []string{"evil.>"}}); err == nil {
		t.Error("an edge created a stream")
	}
	if _, err := js.CreateKeyValue(ctx(), jetstream.KeyValueConfig{Bucket: "EVIL"}); err == nil {
		t.Error("an edge created a bucket")
	}
	if err := js.DeleteStream(ctx(), natsnames.UsageStream); err == nil {
		t.Error("an edge deleted the usage stream")
	}
	if _, err := js.CreateOrUpdateConsumer(ctx(), natsnames.UsageStream, jetstream.ConsumerConfig{Durable: "steal"}); err == nil {
		t.Error("an edge read the usage stream")
	}
	sub, err := edge.SubscribeSync("weir.usage.>")
	if err == nil {
		_ = edge.Flush()
		if _, err := sub.NextMsg(500 * time.Millisecond); err == nil || sub.IsValid() {
			// The server refuses the subscription asynchronously.
			select {
			case <-errs:
			case <-time.After(time.Second):
				t.Error("an edge subscribed to every tenant's usage")
			}
		}
	}
	// Leases are asked for on the edge's own subject only, so the lease
	// server can tell which edge asks.
	for _, subj := range []string{natsnames.LeaseSubject + ".edge-2", natsnames.LeaseSubject} {
		if err := edge.Publish(subj, []byte("forged")); err == nil {
			_ = edge.Flush()
			select {
			case err := <-errs:
				if !strings.Contains(strings.ToLower(err.Error()), "permission") {
					t.Errorf("publishing on %s: %v", subj, err)
				}
			case <-time.After(time.Second):
				t.Errorf("an edge published on %s", subj)
			}
		}
	}
	if err := edge.Publish(natsnames.RevokeSubject, []byte("forged")); err == nil {
		_ = edge.Flush()
		select {
		case err := <-errs:
			if !strings.Contains(strings.ToLower(err.Error()), "permission") {
				t.Errorf("publishing a command: %v", err)
			}
		case <-time.After(time.Second):
			t.Error("an edge published an operator command")
		}
	}
}

// The configuration for a NATS server run apart holds the same users and
// permissions, and nats-server reads it.
func TestServerConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	users, err := natsauth.Ensure(dir, []string{"edge-1"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := natsauth.Ensure(dir, []string{"edge-1"})
	if err != nil || again.ControlPlane != users.ControlPlane || again.Edges["edge-1"] != users.Edges["edge-1"] {
		t.Fatalf("passwords changed between runs (%v)", err)
	}
	if fi, err := os.Stat(natsauth.EdgePasswordFile(dir, "edge-1")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("password file: %v %v", fi, err)
	}
	conf, err := users.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "auth.conf")
	if err := os.WriteFile(path, conf, 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("nats-server refuses the configuration: %v\n%s", err, conf)
	}
	if len(opts.Users) != 2 {
		t.Fatalf("%d users", len(opts.Users))
	}
	for _, u := range opts.Users {
		if u.Username == "edge-1" {
			want := natsauth.EdgePermissions("edge-1")
			if strings.Join(u.Permissions.Publish.Allow, " ") != strings.Join(want.Publish.Allow, " ") {
				t.Errorf("publish permissions %v, want %v", u.Permissions.Publish.Allow, want.Publish.Allow)
			}
		}
	}
	if _, err := natsauth.Ensure(dir, []string{"edge 1"}); err == nil {
		t.Error("an edge id that is not a token accepted")
	}
}
