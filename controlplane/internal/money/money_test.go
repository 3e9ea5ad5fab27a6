package money

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// units are the parser and printer of each unit, for tests over both.
var units = []struct {
	name   string
	places int
	parse  func(string) (int64, error)
	format func(int64) string
}{
	{"micros", MicroPlaces, ParseMicros, FormatMicros},
	{"nanos", NanoPlaces, ParseNanos, FormatNanos},
}

func TestParseExact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		parse func(string) (int64, error)
		want  int64
	}{
		{"2.75", ParseMicros, 2_750_000},
		{"0.275", ParseMicros, 275_000},
		{"11", ParseMicros, 11_000_000},
		{"0", ParseMicros, 0},
		{"0.0", ParseMicros, 0},
		{"000", ParseMicros, 0},
		{"0.000001", ParseMicros, 1},
		{"2.7500000", ParseMicros, 2_750_000}, // trailing zeros add no precision
		{"007.5", ParseMicros, 7_500_000},
		{"9223372036854.775807", ParseMicros, math.MaxInt64},
		{"12.5", ParseNanos, 12_500_000_000},
		{"0.000000001", ParseNanos, 1},
		{"250", ParseNanos, 250_000_000_000},
		{"0.1", ParseNanos, 100_000_000}, // 0.1 is not exact in binary; it is here
		{"9223372036.854775807", ParseNanos, math.MaxInt64},
		{"0.000000000000", ParseNanos, 0},
	}
	for _, tt := range tests {
		got, err := tt.parse(tt.in)
		if err != nil {
			t.Errorf("parse(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("parse(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// TestParseRefuses checks the reason and the exact text of each refusal:
// the CLI prints the text as it is.
func TestParseRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		parse func(string) (int64, error)
		is    error
		msg   string
	}{
		{"0.0000001", ParseMicros, ErrPrecision, `amount "0.0000001" has more than 6 decimal places, below the smallest unit (0.000001 dollars)`},
		{"2.7500001", ParseMicros, ErrPrecision, `amount "2.7500001" has more than 6 decimal places, below the smallest unit (0.000001 dollars)`},
		{"0.0000000001", ParseNanos, ErrPrecision, `amount "0.0000000001" has more than 9 decimal places, below the smallest unit (0.000000001 dollars)`},
		{"-1", ParseMicros, ErrNegative, `amount "-1" must not be negative`},
		{"-0.5", ParseNanos, ErrNegative, `amount "-0.5" must not be negative`},
		{"-x", ParseNanos, ErrNegative, `amount "-x" must not be negative`},
		{"+1", ParseMicros, ErrSyntax, `amount "+1" is not a decimal number of dollars such as 2.75`},
		{"1e3", ParseMicros, ErrSyntax, `amount "1e3" is not a decimal number of dollars such as 2.75`},
		{"", ParseMicros, ErrSyntax, `amount "" is not a decimal number of dollars such as 2.75`},
		{".", ParseMicros, ErrSyntax, `amount "." is not a decimal number of dollars such as 2.75`},
		{"1.", ParseMicros, ErrSyntax, `amount "1." is not a decimal number of dollars such as 2.75`},
		{".5", ParseNanos, ErrSyntax, `amount ".5" is not a decimal number of dollars such as 2.75`},
		{"1.2.3", ParseMicros, ErrSyntax, `amount "1.2.3" is not a decimal number of dollars such as 2.75`},
		{" 1", ParseMicros, ErrSyntax, `amount " 1" is not a decimal number of dollars such as 2.75`},
		{"1,5", ParseMicros, ErrSyntax, `amount "1,5" is not a decimal number of dollars such as 2.75`},
		{"$1", ParseMicros, ErrSyntax, `amount "$1" is not a decimal number of dollars such as 2.75`},
		{"NaN", ParseMicros, ErrSyntax, `amount "NaN" is not a decimal number of dollars such as 2.75`},
		{"١", ParseMicros, ErrSyntax, `amount "١" is not a decimal number of dollars such as 2.75`}, // not an ASCII digit
		{"9223372036854.775808", ParseMicros, ErrRange, `amount "9223372036854.775808" is too large`},
		{"99999999999999999999", ParseNanos, ErrRange, `amount "99999999999999999999" is too large`},
		{"9223372036.854775808", ParseNanos, ErrRange, `amount "9223372036.854775808" is too large`},
	}
	for _, tt := range tests {
		got, err := tt.parse(tt.in)
		if err == nil {
			t.Errorf("parse(%q) = %d, want an error", tt.in, got)
			continue
		}
		if !errors.Is(err, tt.is) {
			t.Errorf("parse(%q) error %v, want it to be %v", tt.in, err, tt.is)
		}
		if err.Error() != tt.msg {
			t.Errorf("parse(%q) error\n%s\nwant\n%s", tt.in, err, tt.msg)
		}
		if got != 0 {
			t.Errorf("parse(%q) = %d with an error, want 0", tt.in, got)
		}
	}
}

func TestFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n      int64
		format func(int64) string
		want   string
	}{
		{2_750_000, FormatMicros, "2.75"},
		{275_000, FormatMicros, "0.275"},
		{11_000_000, FormatMicros, "11"},
		{0, FormatMicros, "0"},
		{1, FormatMicros, "0.000001"},
		{-1, FormatMicros, "-0.000001"},
		{1, FormatNanos, "0.000000001"},
		{0, FormatNanos, "0"},
		{12_500_000_000, FormatNanos, "12.5"},
		{12_000_000_000, FormatNanos, "12"},
		{-1_500_000_000, FormatNanos, "-1.5"},
		{-5, FormatNanos, "-0.000000005"},
		{math.MaxInt64, FormatNanos, "9223372036.854775807"},
		{math.MinInt64, FormatNanos, "-9223372036.854775808"},
		{math.MaxInt64, FormatMicros, "9223372036854.775807"},
		{math.MinInt64, FormatMicros, "-9223372036854.775808"},
	}
	for _, tt := range tests {
		if got := tt.format(tt.n); got != tt.want {
			t.Errorf("format(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// TestRoundTrip checks parse(format(n)) == n over random amounts in both
// units: printing and reading money loses nothing.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 10000; i++ {
		n := r.Int64()
		if i%3 == 0 {
			n = r.Int64N(1_000_000_000)
		}
		for _, u := range units {
			s := u.format(n)
			back, err := u.parse(s)
			if err != nil || back != n {
				t.Fatalf("%s: round trip of %d: %q -> %d, %v", u.name, n, s, back, err)
			}
		}
	}
}

// FuzzRoundTrip checks that every amount from 0 to math.MaxInt64 prints as
// text that reads back as the same amount, and that a negative amount
// prints as text the parsers refuse as negative.
func FuzzRoundTrip(f *testing.F) {
	for _, n := range []int64{0, 1, 9, 10, 999_999, 1_000_000, 2_750_000, 1_000_000_000, math.MaxInt64, -1, math.MinInt64} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		for _, u := range units {
			s := u.format(n)
			back, err := u.parse(s)
			if n < 0 {
				if !errors.Is(err, ErrNegative) {
					t.Fatalf("%s: %d printed as %q, parsed as %d, %v; want ErrNegative", u.name, n, s, back, err)
				}
				continue
			}
			if err != nil || back != n {
				t.Fatalf("%s: round trip of %d: %q -> %d, %v", u.name, n, s, back, err)
			}
		}
	})
}

// FuzzParse checks that the parsers never panic, refuse with exactly one
// of the sentinels, and accept only text whose amount prints back as a
// canonical form that reads as the same amount.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "0", "2.75", "0.000000001", "-1", "+1", ".5", "1.", "1e3", "$1", " 1",
		"9223372036854.775807", "9223372036854.775808", "99999999999999999999", "007.500", "1.2.3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, u := range units {
			n, err := u.parse(s)
			if err != nil {
				reasons := 0
				for _, e := range []error{ErrNegative, ErrSyntax, ErrPrecision, ErrRange} {
					if errors.Is(err, e) {
						reasons++
					}
				}
				if reasons != 1 || n != 0 {
					t.Fatalf("%s: parse(%q) = %d, %v: want 0 and exactly one reason", u.name, s, n, err)
				}
				continue
			}
			if n < 0 {
				t.Fatalf("%s: parse(%q) = %d, negative", u.name, s, n)
			}
			c := u.format(n)
			back, err := u.parse(c)
			if err != nil || back != n {
				t.Fatalf("%s: parse(%q) = %d printed as %q, read back as %d, %v", u.name, s, n, c, back, err)
			}
		}
	})
}
