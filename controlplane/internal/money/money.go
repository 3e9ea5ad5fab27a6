// Package money converts between decimal dollar strings and the integer
// money units of the admin API (R-COST-5), exactly: it works on the decimal
// digits and never goes through a float, so that "0.1" is exactly one tenth
// of a dollar and printing an amount then reading it back loses nothing.
//
// There are two units:
//
//   - micro-dollars (10^-6 dollars, [MicroPlaces] decimal places) for
//     prices, which are dollars per million tokens (R-COST-4);
//   - nano-dollars (10^-9 dollars, [NanoPlaces] decimal places) for every
//     other amount: costs, budget limits, spend.
//
// [FormatMicros] and [FormatNanos] print an amount as a plain decimal number
// of dollars without trailing zeros ("2.75", "0", "-0.000000005"); they
// accept every int64. [ParseMicros] and [ParseNanos] read that form back,
// and trailing zeros after the point ("2.7500") are fine. They refuse, so
// that an amount is never silently rounded or misread:
//
//   - a sign: money in these inputs is never negative, and "+" is not a
//     decimal digit ([ErrNegative], [ErrSyntax]);
//   - anything but ASCII digits with at most one point and digits on both
//     sides of it: no spaces, "$", thousands separators, exponents, "NaN"
//     or empty parts such as "", ".5" and "1." ([ErrSyntax]);
//   - a value below the unit, i.e. more significant decimal places than the
//     unit has: rounding it would change the amount ([ErrPrecision]);
//   - a value that does not fit int64 units ([ErrRange]).
//
// The errors of the parsers name the input and wrap one of these sentinels,
// so that a caller can match them with [errors.Is] and word its own message.
package money

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Decimal places of the two units.
const (
	MicroPlaces = 6 // micro-dollars: prices, per million tokens
	NanoPlaces  = 9 // nano-dollars: every other amount
)

// The reasons a parser refuses an input; its error wraps one of them.
var (
	ErrNegative  = errors.New("negative amount")
	ErrSyntax    = errors.New("not a decimal number of dollars")
	ErrPrecision = errors.New("more decimal places than the unit")
	ErrRange     = errors.New("amount too large")
)

// ParseMicros reads a decimal dollar amount such as "2.75" as micro-dollars
// (2750000).
func ParseMicros(s string) (int64, error) { return parse(s, MicroPlaces) }

// ParseNanos reads a decimal dollar amount such as "2.75" as nano-dollars
// (2750000000).
func ParseNanos(s string) (int64, error) { return parse(s, NanoPlaces) }

// FormatMicros prints micro-dollars as dollars: 2750000 is "2.75", 1 is
// "0.000001".
func FormatMicros(n int64) string { return format(n, MicroPlaces) }

// FormatNanos prints nano-dollars as dollars: 2750000000 is "2.75", 1 is
// "0.000000001".
func FormatNanos(n int64) string { return format(n, NanoPlaces) }

// parseError is a refused input; its text is the one the CLI prints.
type parseError struct {
	input  string
	places int
	err    error // one of the Err sentinels
}

func (e *parseError) Error() string {
	switch e.err {
	case ErrNegative:
		return fmt.Sprintf("amount %q must not be negative", e.input)
	case ErrPrecision:
		return fmt.Sprintf("amount %q has more than %d decimal places, below the smallest unit (%s dollars)",
			e.input, e.places, format(1, e.places))
	case ErrRange:
		return fmt.Sprintf("amount %q is too large", e.input)
	default:
		return fmt.Sprintf("amount %q is not a decimal number of dollars such as 2.75", e.input)
	}
}

func (e *parseError) Unwrap() error { return e.err }

// parse converts s into units of 10^-places dollars, on the digits.
func parse(s string, places int) (int64, error) {
	refuse := func(err error) (int64, error) { return 0, &parseError{input: s, places: places, err: err} }
	if strings.HasPrefix(s, "-") {
		return refuse(ErrNegative)
	}
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" || dot && frac == "" || !allDigits(whole) || !allDigits(frac) {
		return refuse(ErrSyntax)
	}
	frac = strings.TrimRight(frac, "0")
	if len(frac) > places {
		return refuse(ErrPrecision)
	}
	digits := strings.TrimLeft(whole+frac+strings.Repeat("0", places-len(frac)), "0")
	if digits == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return refuse(ErrRange)
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

// format prints n units of 10^-places dollars as an exact decimal without
// trailing zeros: 2750000 at 6 places is "2.75", 0 is "0".
func format(n int64, places int) string {
	neg := n < 0
	var u uint64
	if neg {
		u = uint64(-(n + 1)) + 1 // safe for math.MinInt64
	} else {
		u = uint64(n)
	}
	digits := strconv.FormatUint(u, 10)
	if len(digits) <= places {
		digits = strings.Repeat("0", places-len(digits)+1) + digits
	}
	whole, frac := digits[:len(digits)-places], strings.TrimRight(digits[len(digits)-places:], "0")
	out := whole
	if frac != "" {
		out += "." + frac
	}
	if neg {
		out = "-" + out
	}
	return out
}
