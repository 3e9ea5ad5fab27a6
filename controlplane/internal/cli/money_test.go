package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	configv1 "weir.dev/proto/gen/weir/config/v1"
)

func TestParsePrice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want *configv1.Price
	}{
		{"gpt-x=2.75,11,0.275", &configv1.Price{Model: "gpt-x", InputMicros: proto.Int64(2_750_000),
			OutputMicros: proto.Int64(11_000_000), CacheReadMicros: proto.Int64(275_000)}},
		{"claude=3,15,0.3,3.75", &configv1.Price{Model: "claude", InputMicros: proto.Int64(3_000_000),
			OutputMicros: proto.Int64(15_000_000), CacheReadMicros: proto.Int64(300_000), CacheWriteMicros: proto.Int64(3_750_000)}},
		{"m=1,2", &configv1.Price{Model: "m", InputMicros: proto.Int64(1_000_000), OutputMicros: proto.Int64(2_000_000)}},
		// Empty parts are not given: a member inherits them (R-COST-4).
		{"m=,,0.1", &configv1.Price{Model: "m", CacheReadMicros: proto.Int64(100_000)}},
		{"eu.anthropic.claude-v1:0=0,0", &configv1.Price{Model: "eu.anthropic.claude-v1:0", InputMicros: proto.Int64(0), OutputMicros: proto.Int64(0)}},
	}
	for _, tt := range tests {
		got, err := parsePrice(tt.in)
		if err != nil {
			t.Errorf("parsePrice(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
			t.Errorf("parsePrice(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
	for _, bad := range []string{"gpt", "=1,2", "m=", "m=1,2,3,4,5", "m=,", "m=1.0000001,2", "m=-1,2", "m=a,b"} {
		if p, err := parsePrice(bad); err == nil {
			t.Errorf("parsePrice(%q) = %v, want an error", bad, p)
		}
	}
}
