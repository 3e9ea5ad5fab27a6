package console

import (
	"testing"

	"google.golang.org/protobuf/proto"

	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// TestMoneyInputs pins what the console's forms accept as dollars and the
// exact messages they show for what they refuse: a budget limit is
// nano-dollars, a price micro-dollars per million tokens.
func TestMoneyInputs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		parse func(string) (int64, error)
		in    string
		want  int64
		msg   string // the error, "" for none
	}{
		{parseUSD, "25", 25_000_000_000, ""},
		{parseUSD, " $2.50 ", 2_500_000_000, ""},
		{parseUSD, "0.000000001", 1, ""},
		{parseUSD, "  ", 0, "an amount of dollars is required, such as 25 or 2.50"},
		{parseUSD, "$", 0, "an amount of dollars is required, such as 25 or 2.50"},
		{parseUSD, "-1", 0, "the amount must not be negative"},
		{parseUSD, "$-1", 0, "the amount must not be negative"},
		{parseUSD, ".5", 0, `".5" is not a decimal number of dollars such as 25 or 2.50`},
		{parseUSD, "$$1", 0, `"$1" is not a decimal number of dollars such as 25 or 2.50`},
		{parseUSD, "1,000", 0, `"1,000" is not a decimal number of dollars such as 25 or 2.50`},
		{parseUSD, "0.0000000001", 0, `"0.0000000001" has more than 9 decimal places`},
		{parseUSD, "9223372036.854775808", 0, `"9223372036.854775808" is too large`},
		{parseMicros, "2.5", 2_500_000, ""},
		{parseMicros, " $0.000001 ", 1, ""},
		{parseMicros, ".5", 500_000, ""}, // unlike a budget limit
		{parseMicros, "$.25", 250_000, ""},
		{parseMicros, "", 0, "an amount of dollars per million tokens is required, such as 2.50"},
		{parseMicros, "-0.5", 0, "must not be negative"},
		{parseMicros, "-.5", 0, "must not be negative"},
		{parseMicros, ".", 0, `"." is not a decimal number of dollars such as 2.50`},
		{parseMicros, "1.", 0, `"1." is not a decimal number of dollars such as 2.50`},
		{parseMicros, "..5", 0, `"..5" is not a decimal number of dollars such as 2.50`},
		{parseMicros, "1e3", 0, `"1e3" is not a decimal number of dollars such as 2.50`},
		{parseMicros, ".0000001", 0, `".0000001" has more than 6 decimal places: prices are whole micro-dollars ($0.000001) per million tokens`},
		{parseMicros, "9223372036854.775808", 0, `"9223372036854.775808" is too large`},
	} {
		got, err := tc.parse(tc.in)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if got != tc.want || msg != tc.msg {
			t.Errorf("parse(%q) = %d, %q; want %d, %q", tc.in, got, msg, tc.want, tc.msg)
		}
	}
	if got := optMicrosText(nil); got != "" {
		t.Errorf("optMicrosText(nil) = %q", got)
	}
	if got := optMicrosText(proto.Int64(2_750_000)); got != "2.75" {
		t.Errorf("optMicrosText(2750000) = %q", got)
	}
	p := &configv1.Price{Model: "m", InputMicros: proto.Int64(2_500_000), OutputMicros: proto.Int64(10_000_000), CacheWriteMicros: proto.Int64(1)}
	if got, want := priceText(p), "m: in $2.5, out $10, cache write $0.000001"; got != want {
		t.Errorf("priceText = %q, want %q", got, want)
	}
	for n, want := range map[int64]string{0: "$0", 2_750_000_000: "$2.75", -5: "-$0.000000005", -2_000_000_000: "-$2"} {
		if got := fmtUSD(n); got != want {
			t.Errorf("fmtUSD(%d) = %q, want %q", n, got, want)
		}
	}
}
