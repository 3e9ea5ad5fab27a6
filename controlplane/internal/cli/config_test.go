package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

func TestLoginSavesConfigPrivately(t *testing.T) {
	t.Parallel()
	f, url := startFake(t)
	f.reply("WhoAmI", func(proto.Message) (proto.Message, error) {
		return &adminv1.WhoAmIResponse{Admin: &adminv1.Admin{Name: "root",
			Roles: []*adminv1.RoleBinding{{Role: adminv1.Role_ROLE_CLUSTER_ADMIN}}}}, nil
	})
	dir := filepath.Join(t.TempDir(), "nested", "weir")
	e := env{"WEIR_CONFIG_DIR": dir}
	r := e.must(t, "login", "--url", url+"/", "--token", "tok-123", "--tenant", "acme")
	if !strings.Contains(r.stdout, "as root (cluster-admin)") {
		t.Errorf("login stdout %q", r.stdout)
	}
	if strings.Contains(r.stdout+r.stderr, "tok-123") {
		t.Errorf("login printed the token: %q %q", r.stdout, r.stderr)
	}
	if got := f.requests()[0].auth; got != "Bearer tok-123" {
		t.Errorf("WhoAmI Authorization = %q", got)
	}

	st, err := os.Stat(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm != 0o600 {
		t.Errorf("config.json mode %v, want 0600", perm)
	}
	dst, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := dst.Mode().Perm(); perm != 0o700 {
		t.Errorf("config dir mode %v, want 0700", perm)
	}
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got Config
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Config{URL: url, Token: "tok-123", Tenant: "acme"}, got); diff != "" {
		t.Errorf("saved config (-want +got):\n%s", diff)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("config dir holds %d entries, want config.json alone (no temporary files left)", len(entries))
	}

	// Later commands use the saved URL, token and tenant.
	e.must(t, "key", "list")
	req := f.last(t, "ListApiKeys").(*adminv1.ListApiKeysRequest)
	if req.GetTenant() != "acme" {
		t.Errorf("key list tenant %q, want the saved acme", req.GetTenant())
	}
	e.must(t, "key", "list", "--tenant", "other")
	if got := f.last(t, "ListApiKeys").(*adminv1.ListApiKeysRequest).GetTenant(); got != "other" {
		t.Errorf("key list --tenant other sent %q", got)
	}
	// --tenant "" addresses managed records where the API allows it.
	e.must(t, "provider", "list", "--tenant", "")
	if lr := f.last(t, "ListProviders").(*adminv1.ListProvidersRequest); lr.GetTenant() != "" || lr.GetIncludeShared() {
		t.Errorf("provider list --tenant '' sent %v", lr)
	}
	e.must(t, "provider", "list")
	if lr := f.last(t, "ListProviders").(*adminv1.ListProvidersRequest); lr.GetTenant() != "acme" || !lr.GetIncludeShared() {
		t.Errorf("provider list sent %v", lr)
	}

	// WEIR_URL and WEIR_TOKEN override the saved ones.
	f2, url2 := startFake(t)
	e2 := env{"WEIR_CONFIG_DIR": dir, "WEIR_URL": url2, "WEIR_TOKEN": "env-token"}
	e2.must(t, "tenant", "list")
	if reqs := f2.requests(); len(reqs) != 1 || reqs[0].auth != "Bearer env-token" {
		t.Errorf("env override: requests %v", reqs)
	}
}

func TestLoginRefusedSavesNothing(t *testing.T) {
	t.Parallel()
	f, url := startFake(t)
	f.reply("WhoAmI", func(proto.Message) (proto.Message, error) {
		return nil, connect.NewError(connect.CodeUnauthenticated, nil)
	})
	dir := t.TempDir()
	e := env{"WEIR_CONFIG_DIR": dir}
	r := e.run(t, nil, "login", "--url", url, "--token", "wrong")
	if r.code != exitFailed || !strings.HasPrefix(r.stderr, "error: check token: unauthenticated") {
		t.Errorf("exit %d stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "config.json")); !os.IsNotExist(err) {
		t.Errorf("a refused login saved a config: %v", err)
	}
}

func TestNotLoggedIn(t *testing.T) {
	t.Parallel()
	r := newEnv(t, "", "").run(t, nil, "tenant", "list")
	if r.code != exitBadArgs || !strings.Contains(r.stderr, "not logged in") {
		t.Errorf("exit %d stderr %q", r.code, r.stderr)
	}
}
