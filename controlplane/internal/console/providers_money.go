package console

import (
	"errors"
	"fmt"
	"strings"

	"weir.dev/controlplane/internal/money"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// Prices (R-COST-4) are integer micro-dollars per million tokens in the
// admin API; the console reads and shows them as decimal dollars per
// million tokens, converted exactly by package money (the CLI's rules),
// never through a float.

// parseMicros converts a decimal dollar amount such as "2.75" (an optional
// leading "$" and surrounding spaces allowed, and ".5" for 0.5) into
// micro-dollars, exactly. It refuses a sign, an exponent, more than 6
// significant decimal places (below one micro-dollar) and a value that does
// not fit int64.
func parseMicros(s string) (int64, error) {
	s = dollarInput(s)
	if s == "" {
		return 0, errors.New("an amount of dollars per million tokens is required, such as 2.50")
	}
	in := s
	if strings.HasPrefix(in, ".") {
		in = "0" + in // ".5" is 0.5
	}
	n, err := money.ParseMicros(in)
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, money.ErrNegative):
		return 0, errors.New("must not be negative")
	case errors.Is(err, money.ErrPrecision):
		return 0, fmt.Errorf("%q has more than %d decimal places: prices are whole micro-dollars ($0.000001) per million tokens", s, money.MicroPlaces)
	case errors.Is(err, money.ErrRange):
		return 0, fmt.Errorf("%q is too large", s)
	default:
		return 0, fmt.Errorf("%q is not a decimal number of dollars such as 2.50", s)
	}
}

// optMicrosText prints an optional price part in dollars ("" when unset).
func optMicrosText(v *int64) string {
	if v == nil {
		return ""
	}
	return money.FormatMicros(*v)
}

// priceText prints a price in dollars per million tokens:
// "m: in $2.5, out $10, cache read $1.25".
func priceText(p *configv1.Price) string {
	var parts []string
	add := func(label string, v *int64) {
		if v != nil {
			parts = append(parts, label+" $"+money.FormatMicros(*v))
		}
	}
	add("in", p.InputMicros)
	add("out", p.OutputMicros)
	add("cache read", p.CacheReadMicros)
	add("cache write", p.CacheWriteMicros)
	return p.GetModel() + ": " + strings.Join(parts, ", ")
}
