package provider

import (
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/compile"
)

// pricePart names one part of a price as the admin API lists it
// (ResolvedPrice.inherited_parts) and reaches its field.
type pricePart struct {
	name string // "input", "output", "cache_read", "cache_write"
	ptr  func(*configv1.Price) **int64
}

var priceParts = []pricePart{
	{"input", func(p *configv1.Price) **int64 { return &p.InputMicros }},
	{"output", func(p *configv1.Price) **int64 { return &p.OutputMicros }},
	{"cache_read", func(p *configv1.Price) **int64 { return &p.CacheReadMicros }},
	{"cache_write", func(p *configv1.Price) **int64 { return &p.CacheWriteMicros }},
}

// partOf returns one part of p, nil when p is nil or lacks it.
func partOf(p *configv1.Price, f pricePart) *int64 {
	if p == nil {
		return nil
	}
	return *f.ptr(p)
}

// mergePrice is the edge's merge of a member's price over its record's
// (compile.MergePrice, R-COST-4).
func mergePrice(rec, own *configv1.Price) *configv1.Price { return compile.MergePrice(rec, own) }

// missingParts names the parts a price lacks to be whole on a wire format,
// "" when it is whole (compile.PriceGaps, R-COST-4).
func missingParts(p *configv1.Price, w configv1.WireFormat) string { return compile.PriceGaps(p, w) }
