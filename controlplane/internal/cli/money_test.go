package cli

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	configv1 "weir.dev/proto/gen/weir/config/v1"
)

func TestParseDollarsExact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		scale int
		want  int64
	}{
		{"2.75", microScale, 2_750_000},
		{"0.275", microScale, 275_000},
		{"11", microScale, 11_000_000},
		{"0", microScale, 0},
		{"0.0", microScale, 0},
		{"0.000001", microScale, 1},
		{"2.7500000", microScale, 2_750_000}, // trailing zeros add no precision
		{"007.5", microScale, 7_500_000},
		{"9223372036854.775807", microScale, math.MaxInt64},
		{"12.5", nanoScale, 12_500_000_000},
		{"0.000000001", nanoScale, 1},
		{"250", nanoScale, 250_000_000_000},
		{"0.1", nanoScale, 100_000_000}, // 0.1 is not exact in binary; it is here
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := parseDollars(tt.in, tt.scale)
			if err != nil {
				t.Fatalf("parseDollars(%q, %d): %v", tt.in, tt.scale, err)
			}
			if got != tt.want {
				t.Errorf("parseDollars(%q, %d) = %d, want %d", tt.in, tt.scale, got, tt.want)
			}
		})
	}
}

func TestParseDollarsRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		scale int
		want  string // in the error
	}{
		{"0.0000001", microScale, "more than 6 decimal places"},
		{"2.7500001", microScale, "more than 6 decimal places"},
		{"0.0000000001", nanoScale, "more than 9 decimal places"},
		{"-1", microScale, "negative"},
		{"-0.5", nanoScale, "negative"},
		{"+1", microScale, "not a decimal"},
		{"1e3", microScale, "not a decimal"},
		{"", microScale, "not a decimal"},
		{".", microScale, "not a decimal"},
		{"1.", microScale, "not a decimal"},
		{".5", microScale, "not a decimal"},
		{"1.2.3", microScale, "not a decimal"},
		{" 1", microScale, "not a decimal"},
		{"1,5", microScale, "not a decimal"},
		{"$1", microScale, "not a decimal"},
		{"NaN", microScale, "not a decimal"},
		{"9223372036854.775808", microScale, "too large"},
		{"99999999999999999999", nanoScale, "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := parseDollars(tt.in, tt.scale)
			if err == nil {
				t.Fatalf("parseDollars(%q, %d) = %d, want an error", tt.in, tt.scale, got)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parseDollars(%q) error %q, want it to say %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestFormatDollars(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n     int64
		scale int
		want  string
	}{
		{2_750_000, microScale, "2.75"},
		{275_000, microScale, "0.275"},
		{11_000_000, microScale, "11"},
		{0, microScale, "0"},
		{1, microScale, "0.000001"},
		{1, nanoScale, "0.000000001"},
		{12_500_000_000, nanoScale, "12.5"},
		{-1_500_000_000, nanoScale, "-1.5"},
		{math.MaxInt64, nanoScale, "9223372036.854775807"},
		{math.MinInt64, nanoScale, "-9223372036.854775808"},
	}
	for _, tt := range tests {
		if got := formatDollars(tt.n, tt.scale); got != tt.want {
			t.Errorf("formatDollars(%d, %d) = %q, want %q", tt.n, tt.scale, got, tt.want)
		}
	}
}

// TestDollarsRoundTrip checks parse(format(n)) == n over random amounts, at
// both scales: printing and reading money loses nothing.
func TestDollarsRoundTrip(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 10000; i++ {
		n := r.Int64()
		if i%3 == 0 {
			n = r.Int64N(1_000_000_000)
		}
		for _, scale := range []int{microScale, nanoScale} {
			s := formatDollars(n, scale)
			back, err := parseDollars(s, scale)
			if err != nil || back != n {
				t.Fatalf("round trip of %d at scale %d: %q -> %d, %v", n, scale, s, back, err)
			}
		}
	}
}

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
