package natsembed_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"weir.dev/controlplane/internal/natsembed"
)

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts natsembed.Options
		ok   bool
	}{
		{"defaults with a store", natsembed.Options{StoreDir: "x"}, true},
		{"localhost", natsembed.Options{StoreDir: "x", Host: "localhost", Port: 4222}, true},
		{"ipv6 loopback", natsembed.Options{StoreDir: "x", Host: "::1"}, true},
		{"no store", natsembed.Options{}, false},
		{"public host", natsembed.Options{StoreDir: "x", Host: "0.0.0.0"}, false},
		{"bad port", natsembed.Options{StoreDir: "x", Port: 70000}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := tc.opts.Validate(); (err == nil) != tc.ok {
				t.Errorf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// TestJetStreamSurvivesRestart checks that the embedded server serves
// JetStream KV and keeps it across a restart on the same store directory
// and port.
func TestJetStreamSurvivesRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	s, err := natsembed.Start(natsembed.Options{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	port := s.Port()
	if port == 0 {
		t.Fatal("no port")
	}
	put := func(url string) {
		nc, err := nats.Connect(url)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "T"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(ctx, "k", []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	put(s.ClientURL())
	s.Close()
	s.Close() // idempotent

	s2, err := natsembed.Start(natsembed.Options{StoreDir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.Port() != port {
		t.Errorf("restarted on port %d, want %d", s2.Port(), port)
	}
	nc, err := nats.Connect(s2.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, "k")
	if err != nil || string(e.Value()) != "v" {
		t.Fatalf("after restart: %v, %v", e, err)
	}
}

func TestNewTest(t *testing.T) {
	t.Parallel()
	s := natsembed.NewTest(t)
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if !nc.IsConnected() {
		t.Error("not connected")
	}
}

func TestPortInUseFailsFast(t *testing.T) {
	t.Parallel()
	s := natsembed.NewTest(t)
	start := time.Now()
	_, err := natsembed.Start(natsembed.Options{StoreDir: t.TempDir(), Port: s.Port()})
	if err == nil {
		t.Fatal("a second server took a port in use")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s to fail", d)
	}
}
