package standalone

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestExampleConfigLoads(t *testing.T) {
	t.Parallel()
	c, err := Load("../../../examples/standalone.json", env(map[string]string{"DEMO_PROVIDER_KEY": "sk-demo"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Tables) != 1 || c.Tables[0].Record("demo-pool") == nil || len(c.Tables[0].Record("demo-pool").Members) != 2 {
		t.Fatalf("tables %+v", c.Tables)
	}
	v, err := c.Secrets.Get("demo", "demo-provider-key", "127.0.0.1:18081")
	if err != nil || string(v) != "sk-demo" {
		t.Fatalf("secret %q %v", v, err)
	}
}

func TestRefusesBadConfigs(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, body, want string }{
		{"not json", `{`, "not a valid StandaloneConfig"},
		{"unknown field", `{"tenantz":[]}`, "not a valid StandaloneConfig"},
		{"secret without source", `{"secrets":[{"name":"k","hosts":["h"]}]}`, "give env or file"},
		{"secret env unset", `{"secrets":[{"name":"k","hosts":["h"],"env":"NOPE"}]}`, "NOPE is empty"},
		{"invalid record", `{"tenants":[{"tenant":{"id":"t","name":"t"},"records":[{"id":"r","name":"BAD NAME","wireFormat":"WIRE_FORMAT_OPENAI","baseUrl":"ftp://x"}]}]}`, `tenant "t"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.body), env(nil), func(string) ([]byte, error) { return nil, errors.New("no file") })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestWatchReloadsAndKeepsLastGood(t *testing.T) {
	t.Parallel()
	// In a bubble the watcher's ticker and the test's sleeps run on a fake
	// clock: every poll due by a sleep's end has run when it returns. Real
	// time hardly passes, so each write stamps the file with the bubble's
	// clock for the watcher to see it changed. The os/signal machinery,
	// which Watch uses for SIGHUP, is started outside the bubble: started
	// inside, its goroutine would belong to it.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	signal.Stop(hup)
	synctest.Test(t, func(t *testing.T) { testWatchReloadsAndKeepsLastGood(t) })
}

func testWatchReloadsAndKeepsLastGood(t *testing.T) {
	write := func(path string, b []byte) error {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return err
		}
		return os.Chtimes(path, time.Now(), time.Now())
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "weir.json")
	good, err := os.ReadFile("../../../examples/standalone.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := write(path, good); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var applied []*Config
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, path, 20*time.Millisecond, env(map[string]string{"DEMO_PROVIDER_KEY": "k"}), slog.New(slog.NewTextHandler(io.Discard, nil)), func(c *Config) {
			mu.Lock()
			applied = append(applied, c)
			mu.Unlock()
		})
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(applied) }
	waitFor := func(n int) {
		deadline := time.Now().Add(3 * time.Second)
		for count() < n && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor(1)
	if count() != 1 {
		t.Fatal("first config not applied")
	}
	// An invalid file is refused: nothing new applied.
	time.Sleep(30 * time.Millisecond)
	if err := write(path, []byte(`{"tenants": [`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if count() != 1 {
		t.Fatal("an invalid config was applied")
	}
	// A changed valid file is applied.
	changed := strings.Replace(string(good), `"weight": 2`, `"weight": 3`, 1)
	if err := write(path, []byte(changed)); err != nil {
		t.Fatal(err)
	}
	waitFor(2)
	if count() != 2 {
		t.Fatal("changed config not applied")
	}
	mu.Lock()
	w := applied[1].Tables[0].Record("demo-pool").Members[0].Weight
	mu.Unlock()
	if w != 3 {
		t.Fatalf("weight %d after reload", w)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// R-SEC-2: a standalone file says which loopback ports tenant records may
// dial in cluster.tenantLoopback; when it says nothing, every port (the
// operator wrote every record of the file).
func TestTenantLoopbackRSEC2(t *testing.T) {
	t.Parallel()
	none := func(string) ([]byte, error) { return nil, errors.New("no file") }
	c, err := Parse([]byte(`{}`), env(nil), none)
	if err != nil {
		t.Fatal(err)
	}
	if !c.TenantLoopback.AllPorts {
		t.Errorf("a file that says nothing: %+v, want every port", c.TenantLoopback)
	}
	c, err = Parse([]byte(`{"cluster":{"tenantLoopback":{"ports":[8000,11434]}}}`), env(nil), none)
	if err != nil {
		t.Fatal(err)
	}
	if c.TenantLoopback.AllPorts || len(c.TenantLoopback.Ports) != 2 || c.TenantLoopback.Ports[1] != 11434 {
		t.Errorf("ports 8000, 11434: %+v", c.TenantLoopback)
	}
	c, err = Parse([]byte(`{"cluster":{"tenantLoopback":{}}}`), env(nil), none)
	if err != nil || c.TenantLoopback.AllPorts || len(c.TenantLoopback.Ports) != 0 {
		t.Errorf("an empty tenantLoopback: %+v %v, want no port", c.TenantLoopback, err)
	}
	if _, err := Parse([]byte(`{"cluster":{"tenantLoopback":{"ports":[70000]}}}`), env(nil), none); err == nil || !strings.Contains(err.Error(), "70000") {
		t.Errorf("port 70000: %v, want refused", err)
	}
}

// R-CAP-2: a standalone file's tenants get the same caller-limit defaults
// as from a control plane: 512 in flight when neither the tenant nor the
// file's cluster section sets one, the cluster default when it does.
func TestStandaloneCallerLimitDefaultRCAP2(t *testing.T) {
	t.Parallel()
	const tenants = `"tenants":[{"tenant":{"id":"a","name":"a"}},{"tenant":{"id":"b","name":"b","limits":{"rpm":"60","maxInFlight":"4"}}}]`
	noFile := func(string) ([]byte, error) { return nil, errors.New("no file") }
	for _, tc := range []struct {
		body    string
		wantDef int64
	}{
		{`{` + tenants + `}`, 512},
		{`{"cluster":{"defaultTenantMaxInFlight":"9"},` + tenants + `}`, 9},
	} {
		c, err := Parse([]byte(tc.body), env(nil), noFile)
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range c.Tables {
			want := tc.wantDef
			if tb.TenantID == "b" {
				want = 4
				if tb.Limits.RPM != 60 {
					t.Errorf("tenant b rpm %d, want 60", tb.Limits.RPM)
				}
			}
			if tb.Limits.MaxInFlight != want {
				t.Errorf("%s: tenant %s max_in_flight %d, want %d", tc.body, tb.TenantID, tb.Limits.MaxInFlight, want)
			}
		}
	}
}
