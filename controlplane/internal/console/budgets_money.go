package console

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Money (R-COST-5): the admin API carries every amount as integer
// nano-dollars; the console reads and shows decimal dollars, converted
// exactly on the digits, never through a float (the same rules as the
// CLI's).
const nanoScale = 9

// nanosText prints nano-dollars as an exact decimal number of dollars
// without trailing zeros: 2750000000 is "2.75", 1 is "0.000000001".
func nanosText(n int64) string {
	neg := n < 0
	var u uint64
	if neg {
		u = uint64(-(n + 1)) + 1 // safe for math.MinInt64
	} else {
		u = uint64(n)
	}
	digits := strconv.FormatUint(u, 10)
	if len(digits) <= nanoScale {
		digits = strings.Repeat("0", nanoScale-len(digits)+1) + digits
	}
	whole, frac := digits[:len(digits)-nanoScale], strings.TrimRight(digits[len(digits)-nanoScale:], "0")
	out := whole
	if frac != "" {
		out += "." + frac
	}
	if neg {
		out = "-" + out
	}
	return out
}

// fmtUSD prints nano-dollars as "$2.75".
func fmtUSD(n int64) string {
	if n < 0 {
		return "-$" + nanosText(n)[1:]
	}
	return "$" + nanosText(n)
}

// parseUSD converts a decimal dollar amount such as "2.75" (an optional
// leading "$" and surrounding spaces allowed) into nano-dollars, exactly.
// It refuses a sign, an exponent, more than 9 decimal places and a value
// that does not fit int64.
func parseUSD(s string) (int64, error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "$")
	if s == "" {
		return 0, errors.New("an amount of dollars is required, such as 25 or 2.50")
	}
	if strings.HasPrefix(s, "-") {
		return 0, errors.New("the amount must not be negative")
	}
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" || dot && frac == "" || !dollarDigits(whole) || !dollarDigits(frac) {
		return 0, fmt.Errorf("%q is not a decimal number of dollars such as 25 or 2.50", s)
	}
	frac = strings.TrimRight(frac, "0")
	if len(frac) > nanoScale {
		return 0, fmt.Errorf("%q has more than %d decimal places", s, nanoScale)
	}
	digits := strings.TrimLeft(whole+frac+strings.Repeat("0", nanoScale-len(frac)), "0")
	if digits == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n, nil
}

func dollarDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
