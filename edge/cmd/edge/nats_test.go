package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"

	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"weir.dev/edge/internal/fakeprovider"
	"weir.dev/edge/internal/natstest"
	"weir.dev/edge/internal/secrets"
	"weir.dev/natsconf"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/natsnames"
)

// testSigningKey stands for the control plane's config signing key.
var testSigningKey = ed25519.NewKeyFromSeed([]byte("weir-test-config-signing-seed-32"))

// testPublicKey is WEIR_CONFIG_PUBLIC_KEY for testSigningKey.
var testPublicKey = base64.StdEncoding.EncodeToString(testSigningKey.Public().(ed25519.PublicKey))

// signed wraps payload as the control plane stores it under name.
func signed(name string, payload []byte) []byte {
	sig := ed25519.Sign(testSigningKey, []byte("weir.signed.v1\n"+name+"\n"+string(payload)))
	b, _ := proto.Marshal(&configv1.Signed{Payload: payload, Signature: sig})
	return b
}

// edgeRun runs the edge binary's run in the background; stop cancels it and
// returns its exit code.
func edgeRun(t *testing.T, args []string, env map[string]string) (stop func() int, stderr *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr = &bytes.Buffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, func(k string) string { return env[k] }, io.Discard, stderr) }()
	return func() int {
		cancel()
		select {
		case code := <-done:
			return code
		case <-time.After(15 * time.Second):
			t.Fatal("edge did not exit")
			return -1
		}
	}, stderr
}

func waitReady(t *testing.T, addr string, stderr *bytes.Buffer) time.Duration {
	t.Helper()
	start := time.Now()
	for i := 0; ; i++ {
		if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return time.Since(start)
			}
		}
		if i > 500 {
			t.Fatalf("edge not ready: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func chat(t *testing.T, addr string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer k-test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// NATS mode end to end: the edge takes its config from WEIR_CONFIG, serves
// a call, publishes its record to WEIR_USAGE, exits cleanly; restarted
// while NATS is down, it serves from its disk cache at once.
func TestNATSMode(t *testing.T) {
	fake := fakeprovider.New(fakeprovider.Options{APIKey: "sk-x"})
	up, err := fake.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	sealed, err := secrets.Seal(key, []byte("sk-x"), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("k-test"))
	snap := &configv1.TenantSnapshot{Version: 1, Tenant: &configv1.Tenant{Id: "t", Name: "t"},
		ApiKeys: []*configv1.ApiKey{{Id: "k", Name: "k", Sha256: sum[:]}},
		Records: []*configv1.ProviderRecord{{Id: "r", Name: "pool", TenantId: "t", WireFormat: configv1.WireFormat_WIRE_FORMAT_OPENAI,
			Models: []*configv1.Model{{Name: "gpt-x", Kind: configv1.ModelKind_MODEL_KIND_CHAT}},
			Auth:   &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "authorization"}, KeySecret: "s",
			Members: []*configv1.Member{{Name: "a", BaseUrl: up + "/v1", Weight: 1, Order: 1}}}},
		Secrets: []*configv1.Secret{{Name: "s", TenantId: "t", Hosts: []string{"127.0.0.1"}, Ciphertext: sealed}},
	}
	ns := natstest.Start(t, natstest.Options{})
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, natsconf.ConfigBucketConfig(1))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := proto.Marshal(snap)
	if _, err := kv.Put(ctx, "tenant.t", signed("tenant.t", raw)); err != nil {
		t.Fatal(err)
	}
	stateDir := t.TempDir()
	addr := freeAddr(t)
	args := []string{"--nats-url", ns.URL(), "--state-dir", stateDir, "--listen", addr, "--admin-listen", "", "--edge-id", "edge-1", "--shutdown-grace", "5s"}
	env := map[string]string{"WEIR_EDGE_KEY": hex.EncodeToString(key), "WEIR_CONFIG_PUBLIC_KEY": testPublicKey, "NATS_INSECURE": "true"}
	stop, stderr := edgeRun(t, args, env)
	waitReady(t, addr, stderr)
	// R-SEC-2: the member is a loopback sidecar, which no cluster snapshot
	// has opened to tenant records yet: refused at dial time. Once the
	// cluster snapshot lists its port (controlplane serve
	// --tenant-loopback-ports), it is served; from the disk cache too after
	// a restart.
	calls := 1
	if code := chat(t, addr); code != http.StatusBadGateway {
		t.Fatalf("R-SEC-2 call to a loopback port no cluster snapshot opened: %d, want 502\n%s", code, stderr)
	}
	upURL, _ := url.Parse(up)
	upPort, _ := strconv.Atoi(upURL.Port())
	raw, _ = proto.Marshal(&configv1.ClusterSnapshot{Version: 1, TenantLoopback: &configv1.TenantLoopback{Ports: []uint32{uint32(upPort)}}})
	if _, err := kv.Put(ctx, natsnames.ClusterKey, signed(natsnames.ClusterKey, raw)); err != nil {
		t.Fatal(err)
	}
	// The refused member cools 5 s (R-FAIL-5) before it is tried again.
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		calls++
		code := chat(t, addr)
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("call after the cluster snapshot opened the port: %d\n%s", code, stderr)
		}
	}
	stopAt := time.Now()
	if code := stop(); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	t.Logf("stopped in %v:\n%s", time.Since(stopAt), stderr)
	// The record was flushed to the stream before exit.
	s, err := js.Stream(ctx, natsnames.UsageStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil || info.State.Msgs != uint64(calls) {
		t.Fatalf("stream holds %v records (%v), want %d", info.State.Msgs, err, calls)
	}

	// Restart with NATS down: ready from disk at once, and serving.
	nc.Close()
	ns.Stop()
	stop, stderr = edgeRun(t, args, env)
	took := waitReady(t, addr, stderr)
	t.Logf("ready from the disk cache in %v with NATS down", took)
	if code := chat(t, addr); code != 200 {
		t.Fatalf("call with NATS down: %d\n%s", code, stderr)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

func TestNATSModeUsage(t *testing.T) {
	none := func(string) string { return "" }
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"--config", "x.json", "--nats-url", "nats://127.0.0.1:1"}, none, io.Discard, &stderr); code != 2 {
		t.Fatalf("exit %d with both --config and --nats-url", code)
	}
	if code := run(context.Background(), []string{"--nats-url", "nats://127.0.0.1:1"}, none, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "WEIR_EDGE_KEY") {
		t.Fatalf("exit %d without an edge key: %s", code, stderr.String())
	}
	bad := func(k string) string {
		if k == "WEIR_EDGE_KEY" {
			return "c2hvcnQ="
		}
		return ""
	}
	if code := run(context.Background(), []string{"--nats-url", "nats://127.0.0.1:1"}, bad, io.Discard, &stderr); code != 2 {
		t.Fatalf("exit %d with a short edge key", code)
	}
	stderr.Reset()
	noPub := func(k string) string {
		if k == "WEIR_EDGE_KEY" {
			return strings.Repeat("ab", 32)
		}
		return ""
	}
	if code := run(context.Background(), []string{"--nats-url", "nats://127.0.0.1:1"}, noPub, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "--config-public-key") {
		t.Fatalf("exit %d without a config public key: %s", code, stderr.String())
	}
	// Regression (issue 12): an edge started on an unauthenticated,
	// plain-text NATS connection without --nats-insecure.
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"unauthenticated", "plain text"}},
		{[]string{"--nats-user", "edge-1", "--nats-password", "p"}, []string{"plain text"}},
		{[]string{"--nats-creds", "edge.creds", "--nats-ca", "ca.pem"}, nil},
		{[]string{"--nats-user", "edge-1"}, []string{"go together"}},
	} {
		stderr.Reset()
		withKeys := func(k string) string {
			switch k {
			case "WEIR_EDGE_KEY":
				return strings.Repeat("ab", 32)
			case "WEIR_CONFIG_PUBLIC_KEY":
				return testPublicKey
			}
			return ""
		}
		_, err := parse(append([]string{"--nats-url", "nats://127.0.0.1:1"}, tc.args...), withKeys, &stderr)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("parse %v = %v, want an error about %q", tc.args, err, w)
			}
		}
		if tc.want == nil && err != nil {
			t.Errorf("parse %v = %v", tc.args, err)
		}
	}
}

// status is the status of GET url, or 0 when nothing answers.
func status(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// /readyz in NATS mode: an edge that holds the cluster's current config is
// ready even when the cluster has no tenant yet (an empty WEIR_CONFIG, or
// one with only the cluster snapshot); an edge with no config at all (NATS
// unreachable, no disk cache) is alive but not ready.
func TestNATSModeReadiness(t *testing.T) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	env := map[string]string{"WEIR_EDGE_KEY": hex.EncodeToString(key), "WEIR_CONFIG_PUBLIC_KEY": testPublicKey, "NATS_INSECURE": "true"}
	edge := func(t *testing.T, url string) (addr string, stop func() int, stderr *bytes.Buffer) {
		addr = freeAddr(t)
		stop, stderr = edgeRun(t, []string{"--nats-url", url, "--state-dir", t.TempDir(), "--listen", addr, "--admin-listen", "",
			"--edge-id", "edge-1", "--shutdown-grace", "1s"}, env)
		return addr, stop, stderr
	}
	for _, tc := range []struct {
		name    string
		cluster bool
	}{{"empty cluster", false}, {"only a cluster snapshot", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ns := natstest.Start(t, natstest.Options{})
			nc, err := nats.Connect(ns.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			js, _ := jetstream.New(nc)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			kv, err := js.CreateKeyValue(ctx, natsconf.ConfigBucketConfig(1))
			if err != nil {
				t.Fatal(err)
			}
			if tc.cluster {
				raw, _ := proto.Marshal(&configv1.ClusterSnapshot{Version: 1})
				if _, err := kv.Put(ctx, natsnames.ClusterKey, signed(natsnames.ClusterKey, raw)); err != nil {
					t.Fatal(err)
				}
			}
			addr, stop, stderr := edge(t, ns.URL())
			waitReady(t, addr, stderr)
			if code := chat(t, addr); code != http.StatusUnauthorized {
				t.Fatalf("a key of no tenant: %d, want 401", code)
			}
			if code := stop(); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
		})
	}
	t.Run("no NATS and no cache", func(t *testing.T) {
		addr, stop, stderr := edge(t, "nats://"+freeAddr(t))
		deadline := time.Now().Add(5 * time.Second)
		for status("http://"+addr+"/healthz") != http.StatusOK {
			if time.Now().After(deadline) {
				t.Fatalf("edge not up: %s", stderr)
			}
			time.Sleep(10 * time.Millisecond)
		}
		for range 10 {
			if code := status("http://" + addr + "/readyz"); code != http.StatusServiceUnavailable {
				t.Fatalf("readyz %d without any config, want 503", code)
			}
			time.Sleep(30 * time.Millisecond)
		}
		if code := stop(); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	})
}
