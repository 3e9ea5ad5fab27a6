package console

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// Prices (R-COST-4) are integer micro-dollars per million tokens in the
// admin API; the console reads and shows them as decimal dollars per
// million tokens, converted exactly on the digits, never through a float
// (the CLI's rules: cli.parseDollars at scale 6).
const microScale = 6

// parseMicros converts a decimal dollar amount such as "2.75" (an optional
// leading "$" and surrounding spaces allowed) into micro-dollars, exactly.
// It refuses a sign, an exponent, more than 6 significant decimal places
// (below one micro-dollar) and a value that does not fit int64.
func parseMicros(s string) (int64, error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "$")
	if s == "" {
		return 0, errors.New("an amount of dollars per million tokens is required, such as 2.50")
	}
	if strings.HasPrefix(s, "-") {
		return 0, errors.New("must not be negative")
	}
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" && dot {
		whole = "0" // ".5" is 0.5
	}
	if whole == "" || dot && frac == "" || !dollarDigits(whole) || !dollarDigits(frac) {
		return 0, fmt.Errorf("%q is not a decimal number of dollars such as 2.50", s)
	}
	frac = strings.TrimRight(frac, "0")
	if len(frac) > microScale {
		return 0, fmt.Errorf("%q has more than %d decimal places: prices are whole micro-dollars ($0.000001) per million tokens", s, microScale)
	}
	digits := strings.TrimLeft(whole+frac+strings.Repeat("0", microScale-len(frac)), "0")
	if digits == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n, nil
}

// microsText prints micro-dollars as an exact decimal number of dollars
// without trailing zeros: 2750000 is "2.75", 1 is "0.000001".
func microsText(n int64) string {
	neg := n < 0
	var u uint64
	if neg {
		u = uint64(-(n + 1)) + 1 // safe for math.MinInt64
	} else {
		u = uint64(n)
	}
	digits := strconv.FormatUint(u, 10)
	if len(digits) <= microScale {
		digits = strings.Repeat("0", microScale-len(digits)+1) + digits
	}
	whole, frac := digits[:len(digits)-microScale], strings.TrimRight(digits[len(digits)-microScale:], "0")
	out := whole
	if frac != "" {
		out += "." + frac
	}
	if neg {
		out = "-" + out
	}
	return out
}

// optMicrosText prints an optional price part ("" when unset).
func optMicrosText(v *int64) string {
	if v == nil {
		return ""
	}
	return microsText(*v)
}

// priceText prints a price in dollars per million tokens:
// "m: in $2.5, out $10, cache read $1.25".
func priceText(p *configv1.Price) string {
	var parts []string
	add := func(label string, v *int64) {
		if v != nil {
			parts = append(parts, label+" $"+microsText(*v))
		}
	}
	add("in", p.InputMicros)
	add("out", p.OutputMicros)
	add("cache read", p.CacheReadMicros)
	add("cache write", p.CacheWriteMicros)
	return p.GetModel() + ": " + strings.Join(parts, ", ")
}
