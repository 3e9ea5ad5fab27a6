package rules

import (
	"slices"
	"strings"
	"testing"
)

func TestNATSAuthCheck(t *testing.T) {
	tests := []struct {
		name       string
		a          NATSAuth
		urls       string
		allowPlain bool
		want       []string // substrings of the error; none: no error
	}{
		{"user and password over tls", NATSAuth{User: "u", Password: "p"}, "tls://n:4222", false, nil},
		{"creds with a CA", NATSAuth{Creds: "x.creds", CA: "ca.pem"}, "nats://n:4222", false, nil},
		{"user in the URL, client cert", NATSAuth{Cert: "c", Key: "k"}, "nats://u:p@n:4222", false, nil},
		{"anonymous plain text", NATSAuth{}, "nats://n:4222", false, []string{"unauthenticated", "plain text"}},
		{"anonymous plain text, insecure", NATSAuth{Insecure: true}, "nats://n:4222", false, nil},
		{"anonymous plain text, dev", NATSAuth{}, "nats://n:4222", true, nil},
		{"pairs still checked in dev", NATSAuth{User: "u", Cert: "c"}, "nats://n", true, []string{"--nats-user and --nats-password", "--nats-cert and --nats-key"}},
		{"creds and user", NATSAuth{Creds: "x", User: "u", Password: "p"}, "tls://n", false, []string{"not both"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.a.Check(tc.urls, tc.allowPlain)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// R-SEC-2: the ports tenant records may never reach on an edge's machine.
func TestNATSPortsRSEC2(t *testing.T) {
	got := NATSPorts("nats://a:4333, b, tls://c:7422,,")
	if want := []uint16{4333, 4222, 7422}; !slices.Equal(got, want) {
		t.Fatalf("NATSPorts = %v, want %v", got, want)
	}
}
