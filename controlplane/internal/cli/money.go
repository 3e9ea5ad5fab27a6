package cli

import (
	"fmt"
	"strconv"
	"strings"

	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// Decimal places of the integer money units of the admin API (R-COST-5):
// prices are micro-dollars per million tokens, every other amount of money is
// nano-dollars.
const (
	microScale = 6
	nanoScale  = 9
)

// parseDollars converts a decimal dollar amount such as "2.75" into an
// integer number of units of 10^-scale dollars, exactly: it works on the
// digits, never on a float. It refuses a sign, an exponent, an empty part
// around the point, a value below the unit (more significant decimal places
// than scale; trailing zeros are fine) and a value that does not fit int64.
func parseDollars(s string, scale int) (int64, error) {
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("amount %q must not be negative", s)
	}
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" || dot && frac == "" || !allDigits(whole) || !allDigits(frac) {
		return 0, fmt.Errorf("amount %q is not a decimal number of dollars such as 2.75", s)
	}
	frac = strings.TrimRight(frac, "0")
	if len(frac) > scale {
		return 0, fmt.Errorf("amount %q has more than %d decimal places, below the smallest unit (%s dollars)",
			s, scale, formatDollars(1, scale))
	}
	digits := strings.TrimLeft(whole+frac+strings.Repeat("0", scale-len(frac)), "0")
	if digits == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("amount %q is too large", s)
	}
	return n, nil
}

// allDigits reports whether s holds only ASCII digits (true for "").
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// formatDollars prints n units of 10^-scale dollars as an exact decimal
// without trailing zeros: 2750000 at scale 6 is "2.75", 0 is "0".
func formatDollars(n int64, scale int) string {
	neg := n < 0
	var u uint64
	if neg {
		u = uint64(-(n + 1)) + 1 // safe for math.MinInt64
	} else {
		u = uint64(n)
	}
	digits := strconv.FormatUint(u, 10)
	if len(digits) <= scale {
		digits = strings.Repeat("0", scale-len(digits)+1) + digits
	}
	whole, frac := digits[:len(digits)-scale], strings.TrimRight(digits[len(digits)-scale:], "0")
	out := whole
	if frac != "" {
		out += "." + frac
	}
	if neg {
		out = "-" + out
	}
	return out
}

// formatMicros prints a price (micro-dollars per million tokens) in dollars.
func formatMicros(n int64) string { return formatDollars(n, microScale) }

// formatNanos prints an amount of nano-dollars in dollars.
func formatNanos(n int64) string { return formatDollars(n, nanoScale) }

// priceFlag collects repeated --price M=IN,OUT[,CR[,CW]] flags: dollars per
// million tokens for input, output, cache read and cache write. A part left
// empty ("m=,,0.3") is not given, so a member inherits it from the record
// (R-COST-4). Each model may be priced once. An empty value adds nothing but
// counts as given (see listFlag), which clears the prices on `set`.
type priceFlag struct {
	prices []*configv1.Price
}

// String implements flag.Value.
func (f *priceFlag) String() string {
	var parts []string
	for _, p := range f.prices {
		parts = append(parts, p.GetModel())
	}
	return strings.Join(parts, ",")
}

// Set implements flag.Value.
func (f *priceFlag) Set(s string) error {
	if s == "" {
		return nil
	}
	p, err := parsePrice(s)
	if err != nil {
		return err
	}
	for _, q := range f.prices {
		if q.GetModel() == p.GetModel() {
			return fmt.Errorf("model %q priced twice", p.GetModel())
		}
	}
	f.prices = append(f.prices, p)
	return nil
}

// parsePrice parses "M=IN,OUT[,CR[,CW]]" into a Price in micro-dollars per
// million tokens.
func parsePrice(s string) (*configv1.Price, error) {
	model, amounts, ok := strings.Cut(s, "=")
	if !ok || model == "" || amounts == "" {
		return nil, fmt.Errorf("want MODEL=IN,OUT[,CR[,CW]] in dollars per million tokens, got %q", s)
	}
	parts := strings.Split(amounts, ",")
	if len(parts) > 4 {
		return nil, fmt.Errorf("price %q: at most 4 amounts (input, output, cache read, cache write)", s)
	}
	p := &configv1.Price{Model: model}
	slots := []**int64{&p.InputMicros, &p.OutputMicros, &p.CacheReadMicros, &p.CacheWriteMicros}
	given := false
	for i, part := range parts {
		if part == "" {
			continue
		}
		n, err := parseDollars(part, microScale)
		if err != nil {
			return nil, fmt.Errorf("price %q: %w", s, err)
		}
		*slots[i] = &n
		given = true
	}
	if !given {
		return nil, fmt.Errorf("price %q gives no amount", s)
	}
	return p, nil
}

// formatPrice prints a price as "IN,OUT,CR,CW" in dollars, "-" for a part not
// given.
func formatPrice(p *configv1.Price) string {
	part := func(v *int64) string {
		if v == nil {
			return "-"
		}
		return formatMicros(*v)
	}
	return strings.Join([]string{part(p.InputMicros), part(p.OutputMicros), part(p.CacheReadMicros), part(p.CacheWriteMicros)}, ",")
}
