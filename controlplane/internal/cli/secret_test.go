package cli

import (
	"errors"
	"os"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

// TestSecretSetNeverEchoes checks the value goes from stdin to the request
// (one trailing newline trimmed) and appears in no output, in either output
// mode, on success or on a refusal.
func TestSecretSetNeverEchoes(t *testing.T) {
	t.Parallel()
	const value = "sk-Sup3r-S3cret-VALUE"
	f, url := startFake(t)
	e := newEnv(t, url, "tok")
	for _, tt := range []struct {
		name, stdin string
		args        []string
		refuse      bool
	}{
		{name: "table", stdin: value + "\n", args: []string{"--host", "acme-sweden.openai.azure.com"}},
		{name: "json", stdin: value + "\r\n", args: []string{"--host", "acme-sweden.openai.azure.com", "--output", "json"}},
		{name: "no newline", stdin: value, args: []string{"--host", "a.example.com", "--host", "b.example.com:8443"}},
		{name: "refused", stdin: value + "\n", args: []string{"--host", "a.example.com"}, refuse: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f.reply("SetSecret", func(req proto.Message) (proto.Message, error) {
				if tt.refuse {
					return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("hosts: bad"))
				}
				r := req.(*adminv1.SetSecretRequest)
				return &adminv1.SetSecretResponse{Created: true, Secret: &adminv1.Secret{Name: r.GetName(), Tenant: r.GetTenant(), Hosts: r.GetHosts()},
					Warnings: []*adminv1.Warning{{Code: "secret_host_mismatch", Message: "azure-eu/france uses the secret on another host."}}}, nil
			})
			args := append([]string{"secret", "set", "azure-key", "--tenant", "acme"}, tt.args...)
			r := e.run(t, strings.NewReader(tt.stdin), args...)
			want := exitOK
			if tt.refuse {
				want = exitFailed
			}
			if r.code != want {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, want, r.stderr)
			}
			if strings.Contains(r.stdout, value) || strings.Contains(r.stderr, value) {
				t.Errorf("the secret value was printed:\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
			}
			req := f.last(t, "SetSecret").(*adminv1.SetSecretRequest)
			if req.GetValue() != value {
				t.Errorf("sent value %q, want %q", req.GetValue(), value)
			}
			if !tt.refuse && !strings.Contains(r.stderr, "warning: azure-eu/france uses the secret on another host. [secret_host_mismatch]") {
				t.Errorf("warning not printed: %q", r.stderr)
			}
		})
	}
	req := f.last(t, "SetSecret").(*adminv1.SetSecretRequest)
	if diff := cmp.Diff(&adminv1.SetSecretRequest{Tenant: "acme", Name: "azure-key", Value: value, Hosts: []string{"a.example.com"}},
		req, protocmp.Transform()); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
}

func TestSecretSetRefusesBadStdin(t *testing.T) {
	t.Parallel()
	f, url := startFake(t)
	e := newEnv(t, url, "tok")
	devNull, err := os.Open(os.DevNull) // a character device, like a terminal
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	for _, tt := range []struct {
		name  string
		stdin interface{ Read([]byte) (int, error) }
		want  string
	}{
		{"terminal", devNull, "pipe it in"},
		{"empty", strings.NewReader(""), "is empty"},
		{"newline only", strings.NewReader("\n"), "is empty"},
		{"too long", strings.NewReader(strings.Repeat("x", 64<<10+1)), "longer than 64 KiB"},
		{"not utf-8", strings.NewReader("\xff\xfe"), "not UTF-8"},
	} {
		r := e.run(t, tt.stdin, "secret", "set", "k", "--host", "a.example.com")
		if r.code != exitBadArgs || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%s: exit %d stderr %q, want 2 and %q", tt.name, r.code, r.stderr, tt.want)
		}
	}
	if reqs := f.requests(); len(reqs) != 0 {
		t.Errorf("sent %v", procedures(reqs))
	}
	// 64 KiB exactly is fine.
	if r := e.run(t, strings.NewReader(strings.Repeat("x", 64<<10)+"\n"), "secret", "set", "k", "--host", "a.example.com"); r.code != 0 {
		t.Errorf("64 KiB value: exit %d %q", r.code, r.stderr)
	}
}
