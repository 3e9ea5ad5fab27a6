package cli

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// TestCallerLimitsAgainstRealServerRCAP2 drives R-CAP-2 caller limits
// through the CLI against the real server and Postgres: `tenant limits set`
// keeps the limit whose flag is left out, `tenant show` and `key list` show
// limits as text and JSON, a tenant admin is refused a max_in_flight above
// the cluster default (exit 1) where a cluster admin is not, and bad flag
// values are usage errors (exit 2).
func TestCallerLimitsAgainstRealServerRCAP2(t *testing.T) {
	t.Parallel()
	url, token := startRealServer(t)
	root := newEnv(t, "", "")
	run := func(e env, want int, args ...string) result {
		t.Helper()
		r := e.run(t, nil, args...)
		if r.code != want {
			t.Fatalf("weir %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
		}
		return r
	}
	run(root, 0, "login", "--url", url, "--token", token, "--tenant", "acme")
	run(root, 0, "tenant", "create", "acme")

	r := run(root, 0, "tenant", "limits", "set", "--rpm", "600")
	if out := squash(r.stdout); out != "limits of acme set\nrpm 600\nmax in flight none (cluster default)\neffective max in flight 512\n" {
		t.Errorf("limits set --rpm:\n%s", r.stdout)
	}
	// --max-in-flight alone keeps the rpm (read, then set).
	r = run(root, 0, "tenant", "limits", "set", "--tenant", "acme", "--max-in-flight", "2000", "--output", "json")
	var tenant adminv1.Tenant
	if err := jsonUnmarshal(r.stdout, &tenant); err != nil {
		t.Fatalf("json: %v\n%s", err, r.stdout)
	}
	if tenant.GetName() != "acme" || tenant.GetLimits().GetRpm() != 600 || tenant.GetLimits().GetMaxInFlight() != 2000 || tenant.GetEffectiveMaxInFlight() != 2000 {
		t.Errorf("limits set json: %s", r.stdout)
	}
	if !strings.Contains(r.stdout, `"effective_max_in_flight": "2000"`) {
		t.Errorf("json lacks effective_max_in_flight:\n%s", r.stdout)
	}
	r = run(root, 0, "tenant", "show", "acme")
	for _, want := range []string{"rpm 600\n", "max in flight 2000\n", "effective max in flight 2000\n"} {
		if !strings.Contains(squash(r.stdout), want) {
			t.Errorf("tenant show lacks %q:\n%s", want, r.stdout)
		}
	}
	r = run(root, 0, "tenant", "show", "acme", "--output", "json")
	var shown adminv1.GetTenantResponse
	if err := jsonUnmarshal(r.stdout, &shown); err != nil || shown.GetTenant().GetLimits().GetRpm() != 600 {
		t.Errorf("tenant show json: %v\n%s", err, r.stdout)
	}

	// A tenant admin: up to the default (512) yes, above it no.
	admins := newClients(http.DefaultClient, url, token)
	ctx := context.Background()
	if _, err := admins.admins.CreateAdmin(ctx, connect.NewRequest(&adminv1.CreateAdminRequest{Name: "ta",
		Roles: []*adminv1.RoleBinding{{Role: adminv1.Role_ROLE_TENANT_ADMIN, Tenant: "acme"}}})); err != nil {
		t.Fatal(err)
	}
	tok, err := admins.admins.CreateAdminToken(ctx, connect.NewRequest(&adminv1.CreateAdminTokenRequest{Admin: "ta"}))
	if err != nil {
		t.Fatal(err)
	}
	ta := newEnv(t, url, tok.Msg.GetSecret())
	run(root, 0, "tenant", "limits", "set", "--max-in-flight", "0")
	r = run(ta, 1, "tenant", "limits", "set", "--tenant", "acme", "--max-in-flight", "513")
	if !strings.Contains(r.stderr, "permission denied") || !strings.Contains(r.stderr, "cluster default") {
		t.Errorf("tenant admin above the default: stderr %q", r.stderr)
	}
	r = run(ta, 0, "tenant", "limits", "set", "--tenant", "acme", "--max-in-flight", "512", "--rpm", "0")
	if !strings.Contains(squash(r.stdout), "rpm none\nmax in flight 512\neffective max in flight 512\n") {
		t.Errorf("tenant admin at the default:\n%s", r.stdout)
	}

	// Out of range: refused with every problem listed.
	r = run(root, 1, "tenant", "limits", "set", "--rpm", "100000001", "--max-in-flight", "1000001")
	if !strings.Contains(r.stderr, "2 problems") || !strings.Contains(r.stderr, "rpm") || !strings.Contains(r.stderr, "max") {
		t.Errorf("out of range: stderr %q", r.stderr)
	}
	// Not numbers, negative, or no flag at all: bad usage.
	run(root, 2, "tenant", "limits", "set", "--rpm", "lots")
	run(root, 2, "tenant", "limits", "set", "--max-in-flight", "-1")
	run(root, 2, "tenant", "limits", "set")
	run(root, 2, "key", "create", "x", "--rpm", "-3")

	// Keys: limits at creation, shown by key list.
	run(ta, 0, "key", "create", "batch", "--tenant", "acme", "--rpm", "120", "--max-in-flight", "4")
	run(ta, 0, "key", "create", "plain", "--tenant", "acme")
	r = run(root, 0, "key", "list")
	out := squash(r.stdout)
	if !strings.Contains(out, "RPM MAX IN FLIGHT") || !strings.Contains(out, "batch weir_") || !strings.Contains(out, " 120 4 ") ||
		!strings.Contains(out, " none none ") {
		t.Errorf("key list:\n%s", r.stdout)
	}
	r = run(root, 0, "key", "list", "--output", "json")
	var keys adminv1.ListApiKeysResponse
	if err := jsonUnmarshal(r.stdout, &keys); err != nil {
		t.Fatalf("key list json: %v\n%s", err, r.stdout)
	}
	got := map[string]*configv1.CallerLimits{}
	for _, k := range keys.GetApiKeys() {
		got[k.GetName()] = k.GetLimits()
	}
	if got["batch"].GetRpm() != 120 || got["batch"].GetMaxInFlight() != 4 || got["plain"].GetRpm() != 0 {
		t.Errorf("key list json limits %v", got)
	}
}
