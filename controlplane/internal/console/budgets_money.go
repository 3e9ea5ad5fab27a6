package console

import (
	"errors"
	"fmt"
	"strings"

	"weir.dev/controlplane/internal/money"
)

// Money (R-COST-5): the admin API carries every amount as integer
// nano-dollars; the console reads and shows decimal dollars, converted
// exactly by package money (the CLI's rules), never through a float. The
// console's own part is the form input it allows ("$" and spaces) and the
// wording of its messages.

// fmtUSD prints nano-dollars as "$2.75".
func fmtUSD(n int64) string {
	if n < 0 {
		return "-$" + money.FormatNanos(n)[1:]
	}
	return "$" + money.FormatNanos(n)
}

// dollarInput is an amount typed into a form without the surrounding
// spaces and the one leading "$" a form allows.
func dollarInput(s string) string {
	return strings.TrimPrefix(strings.TrimSpace(s), "$")
}

// parseUSD converts a decimal dollar amount such as "2.75" (an optional
// leading "$" and surrounding spaces allowed) into nano-dollars, exactly.
// It refuses a sign, an exponent, more than 9 decimal places and a value
// that does not fit int64.
func parseUSD(s string) (int64, error) {
	s = dollarInput(s)
	if s == "" {
		return 0, errors.New("an amount of dollars is required, such as 25 or 2.50")
	}
	n, err := money.ParseNanos(s)
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, money.ErrNegative):
		return 0, errors.New("the amount must not be negative")
	case errors.Is(err, money.ErrPrecision):
		return 0, fmt.Errorf("%q has more than %d decimal places", s, money.NanoPlaces)
	case errors.Is(err, money.ErrRange):
		return 0, fmt.Errorf("%q is too large", s)
	default:
		return 0, fmt.Errorf("%q is not a decimal number of dollars such as 25 or 2.50", s)
	}
}
