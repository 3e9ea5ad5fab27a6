package rules

import (
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{"azure-eu": true, "a_1": true, "": false, "Azure": false, "a b": false, strings.Repeat("a", 64): true, strings.Repeat("a", 65): false} {
		if ValidName(s) != want {
			t.Errorf("ValidName(%q) = %v", s, !want)
		}
	}
	for s, want := range map[string]bool{"eu-north": true, "EU_1": true, "eu-*": false, "": false} {
		if ValidRegion(s) != want {
			t.Errorf("ValidRegion(%q) = %v", s, !want)
		}
	}
	for s, want := range map[string]bool{"eu-*": true, "us-?ast": true, "[eu]": false, "eu north": false} {
		if ValidRegionPattern(s) != want {
			t.Errorf("ValidRegionPattern(%q) = %v", s, !want)
		}
	}
	for s, want := range map[string]bool{"meta-llama/Llama-3-8B": true, "eu.anthropic.claude-x-v1:0": true, "a b": false, "": false, strings.Repeat("m", 129): false, strings.Repeat("m", 128): true} {
		if ValidModelName(s) != want {
			t.Errorf("ValidModelName(%q) = %v", s, !want)
		}
	}
	for s, want := range map[string]bool{"x-ratelimit-remaining": true, "a b": false, "": false, "a:b": false} {
		if ValidHeaderName(s) != want {
			t.Errorf("ValidHeaderName(%q) = %v", s, !want)
		}
	}
}

func TestCheckURLRSEC2(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw     string
		cluster bool
		want    []URLProblemKind
	}{
		{"https://api.openai.com/v1", false, nil},
		{"http://127.0.0.1:8000/v1", false, nil}, // R-SEC-2 loopback sidecar
		{"http://localhost:8000", false, nil},    // R-SEC-2
		{"http://vllm.internal:8000", false, []URLProblemKind{URLNotHTTPS}},
		{"http://vllm.internal:8000", true, nil}, // managed or internal
		{"https://10.0.0.5/v1", false, []URLProblemKind{URLPrivateAddress}},
		{"https://169.254.169.254/", false, []URLProblemKind{URLPrivateAddress}},
		{"https://[fe80::1]/", false, []URLProblemKind{URLPrivateAddress}},
		{"http://10.0.0.5/v1", false, []URLProblemKind{URLNotHTTPS, URLPrivateAddress}},
		{"https://10.0.0.5/v1", true, nil},
		{"ftp://x", false, []URLProblemKind{URLInvalid}},
		{"/relative", false, []URLProblemKind{URLInvalid}},
		{"https://user:pw@host/#frag", false, []URLProblemKind{URLInvalid, URLInvalid}},
		// R-SEC-2: a query or fragment would swallow the paths the edge
		// appends (http://127.0.0.1:9090/metrics?x= reached the edge's
		// metrics); an empty one too.
		{"http://127.0.0.1:9090/metrics?x=", false, []URLProblemKind{URLInvalid}},
		{"http://127.0.0.1:9090/metrics?", false, []URLProblemKind{URLInvalid}},
		{"https://api.example.com/v1?api-version=1", true, []URLProblemKind{URLInvalid}},
		{"https://api.example.com/v1#", false, []URLProblemKind{URLInvalid}},
		{"https://user@api.example.com/v1", true, []URLProblemKind{URLInvalid}},
		// R-SEC-2: the dial-time guard's list, not a narrower one.
		{"https://100.100.100.200/", false, []URLProblemKind{URLPrivateAddress}},
		{"https://100.64.0.1/", false, []URLProblemKind{URLPrivateAddress}},
		{"https://100.100.100.200/", true, nil},
		{"https://255.255.255.255/", false, []URLProblemKind{URLPrivateAddress}},
		{"https://255.255.255.255/", true, []URLProblemKind{URLPrivateAddress}},
		{"https://0.0.0.0/", true, []URLProblemKind{URLPrivateAddress}},
		{"https://[ff02::1]/", true, []URLProblemKind{URLPrivateAddress}},
		{"https://240.0.0.1/", false, []URLProblemKind{URLPrivateAddress}},
		{"https://[64:ff9b::a9fe:a9fe]/", false, []URLProblemKind{URLPrivateAddress}},
		{"https://[::ffff:169.254.169.254]/", false, []URLProblemKind{URLPrivateAddress}},
		{"https://168.63.129.16/", false, []URLProblemKind{URLPrivateAddress}},
	}
	for _, tc := range tests {
		got := CheckURL(tc.raw, tc.cluster)
		if len(got) != len(tc.want) {
			t.Errorf("R-SEC-2 CheckURL(%q, %v) = %+v, want kinds %v", tc.raw, tc.cluster, got, tc.want)
			continue
		}
		for i := range got {
			if got[i].Kind != tc.want[i] || strings.Contains(got[i].Message, "pw") {
				t.Errorf("R-SEC-2 CheckURL(%q) problem %d = %+v", tc.raw, i, got[i])
			}
		}
	}
}
