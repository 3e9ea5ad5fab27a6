package cli

import (
	"fmt"
	"strings"

	"weir.dev/controlplane/internal/money"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// priceFlag collects repeated --price M=IN,OUT[,CR[,CW]] flags: dollars per
// million tokens for input, output, cache read and cache write. A part left
// empty ("m=,,0.3") is not given, so a member inherits it from the record
// (R-COST-4). Each model may be priced once. An empty value adds nothing but
// counts as given (see listFlag), which clears the prices on `set`.
type priceFlag struct {
	prices []*configv1.Price
	// raw are the values as given, one per price, so that a problem the
	// server finds in prices[i] is reported as "--price <raw[i]>".
	raw []string
}

// String implements flag.Value.
func (f *priceFlag) String() string {
	var parts []string
	for _, p := range f.prices {
		parts = append(parts, p.GetModel())
	}
	return strings.Join(parts, ",")
}

// repeatable reports that the flag may be given again, once per model.
func (f *priceFlag) repeatable() bool { return true }

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
	f.raw = append(f.raw, s)
	return nil
}

// parsePrice parses "M=IN,OUT[,CR[,CW]]" into a Price in micro-dollars per
// million tokens, each amount read exactly by money.ParseMicros.
func parsePrice(s string) (*configv1.Price, error) {
	model, amounts, ok := strings.Cut(s, "=")
	if !ok || model == "" || amounts == "" {
		return nil, fmt.Errorf("want M=IN,OUT[,CR[,CW]] in dollars per million tokens")
	}
	parts := strings.Split(amounts, ",")
	if len(parts) > 4 {
		return nil, fmt.Errorf("at most 4 amounts (input, output, cache read, cache write)")
	}
	p := &configv1.Price{Model: model}
	slots := []**int64{&p.InputMicros, &p.OutputMicros, &p.CacheReadMicros, &p.CacheWriteMicros}
	given := false
	for i, part := range parts {
		if part == "" {
			continue
		}
		n, err := money.ParseMicros(part)
		if err != nil {
			return nil, err
		}
		*slots[i] = &n
		given = true
	}
	if !given {
		return nil, fmt.Errorf("gives no amount")
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
		return money.FormatMicros(*v)
	}
	return strings.Join([]string{part(p.InputMicros), part(p.OutputMicros), part(p.CacheReadMicros), part(p.CacheWriteMicros)}, ",")
}
