package cli

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/secretbox"
	"weir.dev/controlplane/internal/server"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/pgtest"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

// startRealServer serves the real admin API (internal/server) on loopback,
// over a fresh Postgres database, and returns its URL and a bootstrap
// cluster-admin token.
func startRealServer(t *testing.T) (url, token string) {
	t.Helper()
	ctx := context.Background()
	st := store.New(pgtest.New(t))
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	box, err := secretbox.NewBox(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.Handler(server.Deps{Store: st, Box: box}))
	t.Cleanup(srv.Close)
	token, err = auth.Bootstrap(ctx, st, "root", false, rand.Reader)
	if err != nil {
		t.Fatalf("bootstrap admin: %v", err)
	}
	return srv.URL, token
}

// TestSeedFlowAgainstRealServer drives the seed's example flow through the
// CLI against the real server and a real Postgres: a cluster admin logs in,
// creates a tenant and host-bound secrets (values on stdin), builds an Azure
// pool of two members in two regions with different weights and a member
// price, then a Bedrock pool of two SigV4 members, and `provider show` lists
// the members with inherited fields resolved. Outputs and exit codes are
// asserted, and no output ever holds a secret value.
func TestSeedFlowAgainstRealServer(t *testing.T) {
	t.Parallel()
	url, token := startRealServer(t)
	e := env{"WEIR_CONFIG_DIR": t.TempDir()}
	secrets := map[string]string{
		"azure-sweden-key": "sweden-0123456789abcdef",
		"azure-france-key": "france-0123456789abcdef",
		"aws-key":          "AKIAEXAMPLE0000:wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	}
	var outputs []string
	defer func() { // also when the flow stops early
		for _, o := range outputs {
			for name, v := range secrets {
				if strings.Contains(o, v) {
					t.Errorf("an output holds the value of secret %s:\n%s", name, o)
				}
			}
		}
	}()
	step := func(stdin string, args ...string) result {
		t.Helper()
		var in io.Reader
		if stdin != "" {
			in = strings.NewReader(stdin)
		}
		r := e.run(t, in, args...)
		outputs = append(outputs, r.stdout, r.stderr)
		if r.code != 0 {
			t.Fatalf("weir %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
		return r
	}

	r := step("", "login", "--url", url, "--token", token, "--tenant", "acme")
	if !strings.Contains(r.stdout, "as root (cluster-admin)") {
		t.Errorf("login: %q", r.stdout)
	}
	r = step("", "tenant", "create", "acme")
	if !strings.HasPrefix(r.stdout, "created tenant acme (id ") {
		t.Errorf("tenant create: %q", r.stdout)
	}

	r = step(secrets["azure-sweden-key"]+"\n", "secret", "set", "azure-sweden-key", "--host", "acme-sweden.openai.azure.com")
	if r.stdout != "created secret azure-sweden-key (hosts acme-sweden.openai.azure.com)\n" {
		t.Errorf("secret set: %q", r.stdout)
	}
	step(secrets["azure-france-key"], "secret", "set", "azure-france-key", "--host", "acme-france.openai.azure.com")
	step(secrets["aws-key"]+"\n", "secret", "set", "aws-key",
		"--host", "bedrock-runtime.eu-north-1.amazonaws.com", "--host", "bedrock-runtime.eu-west-1.amazonaws.com")

	r = step("", "provider", "pool", "add", "azure-eu", "sweden", "--preset", "azure-openai",
		"--base-url", "https://acme-sweden.openai.azure.com/openai", "--key-secret", "azure-sweden-key", "--region", "eu-north",
		"--models", "gpt-x")
	if !strings.HasPrefix(r.stdout, "added member sweden to azure-eu (record created as a pool)") {
		t.Errorf("pool add sweden: %q", r.stdout)
	}
	step("", "provider", "pool", "add", "azure-eu", "france", "--base-url", "https://acme-france.openai.azure.com/openai",
		"--key-secret", "azure-france-key", "--region", "eu-west", "--weight", "2", "--price", "gpt-x=2.75,11,0.275")

	step("", "provider", "pool", "add", "bedrock-eu", "stockholm", "--preset", "bedrock",
		"--base-url", "https://bedrock-runtime.eu-north-1.amazonaws.com", "--region", "eu-north", "--models", "anthropic.claude-x",
		"--auth-kind", "sigv4", "--aws-service", "bedrock", "--aws-region", "eu-north-1", "--access-key-secret", "aws-key")
	r = step("", "provider", "pool", "add", "bedrock-eu", "ireland",
		"--base-url", "https://bedrock-runtime.eu-west-1.amazonaws.com", "--region", "eu-west",
		"--auth-kind", "sigv4", "--aws-service", "bedrock", "--aws-region", "eu-west-1", "--access-key-secret", "aws-key")
	// Both members sign with one access key: R-SEC-4 warns.
	if !strings.Contains(r.stderr, "warning: ") || !strings.Contains(r.stderr, "shared_key_secret") {
		t.Errorf("pool add ireland: no shared_key_secret warning on stderr: %q", r.stderr)
	}

	// provider show: the members with inherited fields resolved.
	r = step("", "provider", "show", "azure-eu")
	out := squash(r.stdout)
	for _, want := range []string{
		"record azure-eu\n", "kind pool\n", "preset azure-openai\n", "wire format openai\n", "models gpt-x\n",
		"sweden openai 1 1 on eu-north https://acme-sweden.openai.azure.com/openai\n",
		"france openai 1 2 on eu-west https://acme-france.openai.azure.com/openai\n",
		"member sweden:\n", " auth api-key (header api-key) (inherited)\n", " key secret azure-sweden-key\n", " region eu-north\n",
		" models gpt-x (inherited)\n",
		"member france:\n", " key secret azure-france-key\n", " weight 2\n",
		" price gpt-x input 2.75, output 11, cache read 0.275 USD/Mtok\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("provider show azure-eu lacks %q:\n%s", want, r.stdout)
		}
	}

	r = step("", "provider", "show", "bedrock-eu", "--output", "json")
	noEnumNames(t, "provider show --output json", r.stdout)
	if !strings.Contains(r.stdout, `"kind": "sigv4"`) || !strings.Contains(r.stdout, `"wire_format": "bedrock"`) {
		t.Errorf("provider show json lacks the words sigv4 and bedrock:\n%s", r.stdout)
	}
	var detail adminv1.GetProviderResponse
	if err := jsonUnmarshal(r.stdout, &detail); err != nil {
		t.Fatalf("provider show json: %v\n%s", err, r.stdout)
	}
	var names []string
	for _, m := range detail.GetDetail().GetMembers() {
		names = append(names, m.GetMember().GetName())
		eff := m.GetEffective()
		if eff.GetAuth().GetKind().String() != "AUTH_KIND_SIGV4" || eff.GetAuth().GetAccessKeySecret() != "aws-key" ||
			eff.GetAuth().GetAwsService() != "bedrock" {
			t.Errorf("bedrock member %s auth %v", m.GetMember().GetName(), eff.GetAuth())
		}
		if !slices.Contains(eff.GetInheritedFields(), "models") || !slices.Equal(eff.GetModels(), []string{"anthropic.claude-x"}) {
			t.Errorf("bedrock member %s models %v inherited %v", m.GetMember().GetName(), eff.GetModels(), eff.GetInheritedFields())
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"ireland", "stockholm"}) {
		t.Errorf("bedrock-eu members %v", names)
	}

	// A refused change exits 1 and lists every problem.
	r = e.run(t, nil, "provider", "pool", "add", "azure-eu", "bad", "--base-url", "http://acme-bad.example.com/openai",
		"--key-secret", "no-such-secret", "--price", "gpt-unknown=1,2")
	outputs = append(outputs, r.stdout, r.stderr)
	if r.code != exitFailed || !strings.HasPrefix(r.stderr, "error: add member bad to azure-eu: invalid argument") ||
		strings.Count(r.stderr, "\n  ") < 2 {
		t.Errorf("refused pool add: exit %d\nstderr: %s", r.code, r.stderr)
	}

	// A member price without cache prices on a record that prices nothing:
	// refused (R-COST-4), explained once, in the CLI's words.
	r = e.run(t, nil, "provider", "pool", "add", "bedrock-eu", "frankfurt",
		"--base-url", "https://bedrock-runtime.eu-central-1.amazonaws.com", "--region", "eu-central",
		"--auth-kind", "sigv4", "--aws-service", "bedrock", "--aws-region", "eu-central-1", "--access-key-secret", "aws-key",
		"--price", "anthropic.claude-x=3,15")
	outputs = append(outputs, r.stdout, r.stderr)
	want := "error: add member frankfurt to bedrock-eu: invalid argument: 1 problem\n" +
		"  --price anthropic.claude-x=3,15: a member price must be whole when the record has no price for \"anthropic.claude-x\": " +
		"it lacks cache read and cache write, and those tokens would cost nothing (R-COST-4); give them (0 for a part the provider " +
		"does not charge), or price the model on the record [price_not_whole]\n"
	if r.code != exitFailed || r.stderr != want {
		t.Errorf("member price without cache prices: exit %d\nstderr %q\nwant   %q", r.code, r.stderr, want)
	}
	// Whole, it is taken.
	step("", "provider", "pool", "add", "bedrock-eu", "frankfurt",
		"--base-url", "https://bedrock-runtime.eu-central-1.amazonaws.com", "--region", "eu-central",
		"--auth-kind", "sigv4", "--aws-service", "bedrock", "--aws-region", "eu-central-1", "--access-key-secret", "aws-key",
		"--price", "anthropic.claude-x=3,15,0.3,3.75")

	r = step("", "secret", "list", "--output", "json")
	var list map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("secret list json: %v", err)
	}
	r = step("", "provider", "pool", "list", "azure-eu")
	if !strings.Contains(squash(r.stdout), "france openai 1 2 on eu-west") {
		t.Errorf("pool list:\n%s", r.stdout)
	}
}
