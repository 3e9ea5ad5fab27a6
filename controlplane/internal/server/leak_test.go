package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/proto/gen/weir/admin/v1/adminv1connect"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// TestNoSecretLeaks sets a secret with a distinctive value, then runs a
// full session — reads, refused writes that carry the value, the secret's
// use by a provider record, deletion — and scans every response body,
// header and trailer, every log line and the database's audit log and
// outbox for the value. Plaintext API keys and admin tokens get the same
// scan outside the one response that returns them.
func TestNoSecretLeaks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	var b [12]byte
	_, _ = rand.Read(b[:])
	value := "sk-LEAK-" + hex.EncodeToString(b[:])
	awsValue := "AKIALEAK" + hex.EncodeToString(b[:4]) + ":" + value
	c, a := e.as[cluster], e.as[tadmA]
	hc := &http.Client{Transport: &recorder{token: e.tokens[tadmA], rt: http.DefaultTransport, out: e.responses}}
	providers := adminv1connect.NewProviderServiceClient(hc, e.url, connect.WithAcceptCompression("gzip", nil, nil))

	set := func(cl *clients, tenant, name, v string, hosts ...string) (*connect.Response[adminv1.SetSecretResponse], error) {
		return cl.secrets.SetSecret(ctx, connect.NewRequest(&adminv1.SetSecretRequest{Tenant: tenant, Name: name, Value: v, Hosts: hosts}))
	}
	if _, err := set(a, "a", "openai", value, "api.openai.com"); err != nil {
		t.Fatal(err)
	}
	if _, err := set(a, "a", "aws", awsValue, "bedrock-runtime.us-east-1.amazonaws.com"); err != nil {
		t.Fatal(err)
	}
	// A pool whose members use the secret from hosts it is not bound to.
	if _, err := providers.CreateProvider(ctx, connect.NewRequest(&adminv1.CreateProviderRequest{
		Tenant: "a", Name: "gpt", Preset: adminv1.Preset_PRESET_OPENAI,
		Spec: &adminv1.ProviderSpec{KeySecret: "openai", Models: []*configv1.Model{{Name: "gpt-x"}}},
		Members: []*adminv1.NewPoolMember{
			{Name: "eu1", Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://eu.example.com/v1"}},
			{Name: "us1", Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://us.example.com/v1"}},
		},
	})); err != nil {
		t.Fatalf("CreateProvider: %v", err)
	}
	// Re-set with the same hosts: accepted, with host-mismatch warnings.
	resp, err := set(a, "a", "openai", value, "api.openai.com")
	if err != nil {
		t.Fatal(err)
	}
	if w := resp.Msg.GetWarnings(); len(w) != 1 || w[0].GetCode() != "secret_host_mismatch" || len(w[0].GetMembers()) != 2 {
		t.Errorf("warnings = %v, want one secret_host_mismatch for eu1 and us1", w)
	}
	if u := resp.Msg.GetSecret().GetUsedBy(); len(u) != 1 || u[0].GetRecord() != "gpt" || u[0].GetField() != "key_secret" {
		t.Errorf("used_by = %v", u)
	}
	if _, err := set(a, "a", "openai", value, "eu.example.com", "us.example.com:443"); err != nil {
		t.Fatal(err)
	}

	// Refused requests carrying the value.
	refused := []struct {
		name string
		call func() error
		want connect.Code
	}{
		{"bad hosts", func() error { _, err := set(a, "a", "x", value, "https://"+value); return err }, connect.CodeInvalidArgument},
		{"value as name", func() error { _, err := set(a, "a", value, value, "h.example"); return err }, connect.CodeInvalidArgument},
		{"wrong role", func() error { _, err := set(e.as[costA], "a", "x", value, "h.example"); return err }, connect.CodePermissionDenied},
		{"other tenant", func() error { _, err := set(a, "b", "x", value, "h.example"); return err }, connect.CodeNotFound},
		{"no token", func() error { _, err := set(e.as[noToken], "a", "x", value, "h.example"); return err }, connect.CodeUnauthenticated},
		{"delete in use", func() error {
			_, err := a.secrets.DeleteSecret(ctx, connect.NewRequest(&adminv1.DeleteSecretRequest{Tenant: "a", Name: "openai"}))
			return err
		}, connect.CodeFailedPrecondition},
	}
	for _, r := range refused {
		if err := r.call(); connect.CodeOf(err) != r.want {
			t.Errorf("%s: %v, want %v", r.name, err, r.want)
		}
	}

	// Reads of everything.
	key, err := a.keys.CreateApiKey(ctx, connect.NewRequest(&adminv1.CreateApiKeyRequest{Tenant: "a", Name: "ci"}))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := a.admins.CreateAdminToken(ctx, connect.NewRequest(&adminv1.CreateAdminTokenRequest{Description: "ci"}))
	if err != nil {
		t.Fatal(err)
	}
	mark := len(e.responses.Bytes()) // the key and token were returned above, once
	for _, cl := range []*clients{c, a, e.as[padmA], e.as[costA]} {
		for _, tn := range []string{"a", ""} {
			_, _ = cl.secrets.ListSecrets(ctx, connect.NewRequest(&adminv1.ListSecretsRequest{Tenant: tn}))
			_, _ = cl.audit.ListAuditEvents(ctx, connect.NewRequest(&adminv1.ListAuditEventsRequest{Tenant: tn}))
			_, _ = cl.doctor.Diagnose(ctx, connect.NewRequest(&adminv1.DiagnoseRequest{Tenant: tn}))
			_ = drain(cl.usage.ExportUsage(ctx, connect.NewRequest(&adminv1.ExportUsageRequest{Tenant: tn,
				StartTime: timestamppb.New(time.Now().Add(-time.Hour)), EndTime: timestamppb.New(time.Now().Add(time.Hour))})))
		}
		_, _ = cl.tenants.GetTenant(ctx, connect.NewRequest(&adminv1.GetTenantRequest{Tenant: "a"}))
		_, _ = cl.keys.ListApiKeys(ctx, connect.NewRequest(&adminv1.ListApiKeysRequest{Tenant: "a", IncludeRevoked: true}))
		_, _ = cl.admins.ListAdminTokens(ctx, connect.NewRequest(&adminv1.ListAdminTokensRequest{}))
		_, _ = cl.admins.WhoAmI(ctx, connect.NewRequest(&adminv1.WhoAmIRequest{}))
	}
	if _, err := providers.GetProvider(ctx, connect.NewRequest(&adminv1.GetProviderRequest{Tenant: "a", Name: "gpt"})); err != nil {
		t.Errorf("GetProvider: %v", err)
	}
	if _, err := providers.DeleteProvider(ctx, connect.NewRequest(&adminv1.DeleteProviderRequest{Tenant: "a", Name: "gpt"})); err != nil {
		t.Errorf("DeleteProvider: %v", err)
	}
	if _, err := a.secrets.DeleteSecret(ctx, connect.NewRequest(&adminv1.DeleteSecretRequest{Tenant: "a", Name: "openai"})); err != nil {
		t.Errorf("DeleteSecret: %v", err)
	}

	var db bytes.Buffer
	for _, q := range []string{
		"SELECT coalesce(json_agg(x)::text, '') FROM audit_log x",
		"SELECT coalesce(json_agg(x)::text, '') FROM outbox x",
		"SELECT coalesce(json_agg(x)::text, '') FROM admin_tokens x",
		"SELECT coalesce(json_agg(x)::text, '') FROM api_keys x",
		"SELECT coalesce(string_agg(encode(ciphertext, 'escape'), ''), '') FROM secrets",
	} {
		var s string
		if err := e.st.Pool().QueryRow(ctx, q).Scan(&s); err != nil {
			t.Fatal(err)
		}
		db.WriteString(s)
	}
	if !bytes.Contains(e.responses.Bytes(), []byte("secret_host_mismatch")) || !bytes.Contains(e.responses.Bytes(), []byte(key.Msg.GetKey())) {
		t.Fatal("responses were not recorded; the scan would prove nothing")
	}
	logs := e.logs.Bytes()
	if !bytes.Contains(logs, []byte("rpc refused")) {
		t.Fatalf("the log captured nothing; the scan would prove nothing:\n%s", logs)
	}
	responses := e.responses.Bytes()
	for what, secret := range map[string]string{"secret value": value, "aws secret": awsValue, "aws secret key": value} {
		for where, hay := range map[string][]byte{"responses": responses, "logs": logs, "database": db.Bytes()} {
			if bytes.Contains(hay, []byte(secret)) {
				t.Errorf("the %s appears in %s", what, where)
			}
		}
	}
	for what, secret := range map[string]string{"API key": key.Msg.GetKey(), "admin token": tok.Msg.GetSecret(), "bootstrap token": e.tokens[cluster]} {
		for where, hay := range map[string][]byte{"later responses": responses[mark:], "logs": logs, "database": db.Bytes()} {
			if bytes.Contains(hay, []byte(secret)) {
				t.Errorf("the %s appears in %s", what, where)
			}
		}
	}
}
