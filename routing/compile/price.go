package compile

import (
	configv1 "weir.dev/proto/gen/weir/config/v1"

	"weir.dev/routing"
)

// recordPrices indexes the record's own prices by model, the first of a
// model priced twice (a problem CheckRecord reports) winning.
func recordPrices(in []*configv1.Price) map[string]*configv1.Price {
	out := make(map[string]*configv1.Price, len(in))
	for _, p := range in {
		if _, dup := out[p.GetModel()]; !dup {
			out[p.GetModel()] = p
		}
	}
	return out
}

// memberPrices merges an endpoint's own prices over its record's, per model
// (R-COST-4): the member's price for a model replaces only the parts it
// gives. Every model the record prices is priced on every member; a model
// only the member prices takes the member's price alone. own is nil for a
// plain record's endpoint. Whether the merged prices are whole is
// CheckRecord's rule.
func memberPrices(rc *recordCtx, own []*configv1.Price) map[string]routing.Price {
	out := make(map[string]routing.Price, len(rc.prices)+len(own))
	for model, p := range rc.prices {
		out[model] = merge(routing.Price{}, p)
	}
	seen := map[string]bool{}
	for _, p := range own {
		if seen[p.GetModel()] {
			continue
		}
		seen[p.GetModel()] = true
		out[p.GetModel()] = merge(out[p.GetModel()], p)
	}
	return out
}

// merge returns base with every part p gives replacing base's.
func merge(base routing.Price, p *configv1.Price) routing.Price {
	if v := p.InputMicros; v != nil {
		base.Input, base.HasInput = routing.Micros(*v), true
	}
	if v := p.OutputMicros; v != nil {
		base.Output, base.HasOutput = routing.Micros(*v), true
	}
	if v := p.CacheReadMicros; v != nil {
		base.CacheRead, base.HasCacheRead = routing.Micros(*v), true
	}
	if v := p.CacheWriteMicros; v != nil {
		base.CacheWrite, base.HasCacheWrite = routing.Micros(*v), true
	}
	return base
}
