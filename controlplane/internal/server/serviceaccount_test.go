package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/proto/gen/weir/admin/v1/adminv1connect"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// A secret a google-service-account member (Vertex AI) signs with must hold
// a service account's JSON key: SetSecret refuses any other value once such
// a member names the secret, saying every problem and quoting none of the
// value, and warns when the key's token endpoint is not among the hosts
// (R-SEC-1: the signed token request goes there).
func TestServiceAccountKeySecret(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	a := e.as[tadmA]
	hc := &http.Client{Transport: &recorder{token: e.tokens[tadmA], rt: http.DefaultTransport, out: e.responses}, Timeout: time.Minute}
	providers := adminv1connect.NewProviderServiceClient(hc, e.url)
	const vertexHost = "us-central1-aiplatform.googleapis.com"
	key := func(tokenURI string) string {
		k := `{"type":"service_account","client_email":"weir@p.iam.gserviceaccount.com","private_key":"-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n"`
		if tokenURI != "" {
			k += `,"token_uri":"` + tokenURI + `"`
		}
		return k + "}"
	}
	set := func(name, value string, hosts ...string) (*connect.Response[adminv1.SetSecretResponse], error) {
		return a.secrets.SetSecret(ctx, connect.NewRequest(&adminv1.SetSecretRequest{Tenant: "a", Name: name, Value: value, Hosts: hosts}))
	}

	// Before any member uses it, a secret's value is not judged.
	if _, err := set("vertex-key", "not-a-key-SECRETVALUE", vertexHost, "oauth2.googleapis.com"); err != nil {
		t.Fatal(err)
	}
	if _, err := providers.CreateProvider(ctx, connect.NewRequest(&adminv1.CreateProviderRequest{
		Tenant: "a", Name: "gemini", Preset: adminv1.Preset_PRESET_VERTEX,
		Spec: &adminv1.ProviderSpec{KeySecret: "vertex-key", Models: []*configv1.Model{{Name: "gemini-x"}}},
		Members: []*adminv1.NewPoolMember{
			{Name: "us", Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://" + vertexHost + "/v1/projects/p/locations/us-central1/publishers/google"}},
		},
	})); err != nil {
		t.Fatalf("CreateProvider: %v", err)
	}

	for _, tc := range []struct {
		name, value string
		want        []string
	}{
		{"not JSON", "not-a-key-SECRETVALUE", []string{"not a JSON service account key"}},
		{"an API key's JSON", `{"api_key":"SECRETVALUE"}`, []string{`needs "type": "service_account"`}},
		{"no private key, plain-http token endpoint", `{"type":"service_account","client_email":"x@y","token_uri":"http://SECRETVALUE.example/token"}`,
			[]string{`needs "type": "service_account"`, "token_uri is not an https URL"}},
	} {
		_, err := set("vertex-key", tc.value, vertexHost, "oauth2.googleapis.com")
		if connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Errorf("%s: %v, want invalid_argument", tc.name, err)
			continue
		}
		msg := err.Error()
		for _, w := range tc.want {
			if !strings.Contains(msg, w) || !strings.Contains(msg, `member "us" of record "gemini"`) {
				t.Errorf("%s: %q lacks %q or the member", tc.name, msg, w)
			}
		}
		if strings.Contains(msg, "SECRETVALUE") {
			t.Errorf("%s: the error quotes the value: %q", tc.name, msg)
		}
	}

	// A key: accepted; bound to both hosts, no warning.
	r, err := set("vertex-key", key(""), vertexHost, "oauth2.googleapis.com")
	if err != nil {
		t.Fatal(err)
	}
	if w := r.Msg.GetWarnings(); len(w) != 0 {
		t.Errorf("warnings %v, want none", w)
	}
	// Its token endpoint left out of the hosts: accepted, with a warning
	// naming the member; likewise for a key with a token_uri of its own.
	for _, tc := range []struct{ value, host string }{{key(""), "oauth2.googleapis.com"}, {key("https://token.example.com/t"), "token.example.com"}} {
		r, err = set("vertex-key", tc.value, vertexHost)
		if err != nil {
			t.Fatal(err)
		}
		if w := r.Msg.GetWarnings(); len(w) != 1 || w[0].GetCode() != "secret_host_mismatch" || len(w[0].GetMembers()) != 1 || w[0].GetMembers()[0] != "us" {
			t.Errorf("token endpoint %s not bound: warnings %v, want secret_host_mismatch for us", tc.host, w)
		}
		r, err = set("vertex-key", tc.value, vertexHost, tc.host)
		if err != nil || len(r.Msg.GetWarnings()) != 0 {
			t.Errorf("bound to %s: %v, warnings %v", tc.host, err, r.Msg.GetWarnings())
		}
	}
}
