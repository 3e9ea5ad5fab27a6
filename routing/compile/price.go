package compile

import (
	"strconv"
	"strings"

	configv1 "weir.dev/proto/gen/weir/config/v1"

	"weir.dev/routing"
)

// recordPrices indexes the record's own prices by model, reporting prices
// for models the record does not list, a model priced twice, and negative
// parts. Whether a price is whole is checked per member, after merging.
func (c *compiler) recordPrices(where string, in []*configv1.Price, models map[string]routing.ModelKind) map[string]*configv1.Price {
	out := make(map[string]*configv1.Price, len(in))
	for _, p := range in {
		field := "prices[" + strconv.Quote(p.GetModel()) + "]"
		if _, ok := models[p.GetModel()]; !ok {
			c.ps.add(where, field, "%s is not a model of the record", strconv.Quote(p.GetModel()))
		}
		if _, dup := out[p.GetModel()]; dup {
			c.ps.add(where, field, "the model is priced twice")
			continue
		}
		c.priceSigns(where, field, p)
		out[p.GetModel()] = p
	}
	return out
}

// priceSigns reports every negative part of a price.
func (c *compiler) priceSigns(where, field string, p *configv1.Price) {
	for _, part := range []struct {
		name string
		v    *int64
	}{
		{"input_micros", p.InputMicros},
		{"output_micros", p.OutputMicros},
		{"cache_read_micros", p.CacheReadMicros},
		{"cache_write_micros", p.CacheWriteMicros},
	} {
		if part.v != nil && *part.v < 0 {
			c.ps.add(where, field+"."+part.name, "must not be negative, got %d", *part.v)
		}
	}
}

// memberPrices merges a member's prices over its record's, per model
// (R-COST-4): the member's price for a model replaces only the parts it
// gives. Every model the record prices is priced on every member (the member
// may override parts); a model only the member prices takes the member's
// price alone.
//
// Every merged price of a model the member serves must be whole: input,
// output and cache read, and cache write too on the anthropic and bedrock
// wire formats, since unpriced cache tokens would cost nothing. A record
// with no price for a model is merely unpriced for it (R-MODEL-4); it is a
// price that exists but lacks parts that is a problem. For a plain record
// (mp nil) the merged prices are the record's own, and their problems are the
// record's.
func (c *compiler) memberPrices(rc *recordCtx, where string, own []*configv1.Price, m *routing.Member) map[string]routing.Price {
	out := make(map[string]routing.Price, len(rc.prices)+len(own))
	for model, p := range rc.prices {
		out[model] = merge(routing.Price{}, p)
	}
	ownModels := map[string]bool{}
	for _, p := range own {
		model := p.GetModel()
		field := "prices[" + strconv.Quote(model) + "]"
		if _, ok := rc.rec.Models[model]; !ok {
			c.ps.add(where, field, "%s is not a model of the record", strconv.Quote(model))
		} else if m != nil && m.Models != nil && !m.Models[model] {
			c.ps.add(where, field, "%s is not among the member's models", strconv.Quote(model))
		}
		if ownModels[model] {
			c.ps.add(where, field, "the model is priced twice")
			continue
		}
		ownModels[model] = true
		c.priceSigns(where, field, p)
		out[model] = merge(out[model], p)
	}
	for _, model := range sortedKeys(out) {
		if _, ok := rc.rec.Models[model]; !ok {
			continue // reported above
		}
		if m != nil && m.Models != nil && !m.Models[model] {
			continue // never charged on this member
		}
		missing := missingParts(out[model], rc.rec.Wire)
		if missing == "" {
			continue
		}
		field := "prices[" + strconv.Quote(model) + "]"
		_, recordHas := rc.prices[model]
		switch {
		case m == nil:
			c.ps.add(where, field, "lacks %s: a price must be whole (unpriced cache tokens would cost nothing, R-COST-4)", missing)
		case !recordHas:
			c.ps.add(where, field, "lacks %s: the record has no price for the model, so the member's must be whole (unpriced cache tokens would cost nothing, R-COST-4)", missing)
		case ownModels[model]:
			c.ps.add(where, field, "lacks %s after merging with the record's price (unpriced cache tokens would cost nothing, R-COST-4)", missing)
		default:
			// The record's own price lacks parts and this member does not
			// give them: reported against the member, since another member
			// may well give them.
			c.ps.add(where, field, "lacks %s: the record's price lacks it and the member gives none (unpriced cache tokens would cost nothing, R-COST-4)", missing)
		}
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

// missingParts names the parts a price lacks to be whole on a wire format,
// or returns "" when it is whole.
func missingParts(p routing.Price, w routing.WireFormat) string {
	var miss []string
	if !p.HasInput {
		miss = append(miss, "input_micros")
	}
	if !p.HasOutput {
		miss = append(miss, "output_micros")
	}
	if !p.HasCacheRead {
		miss = append(miss, "cache_read_micros")
	}
	if !p.HasCacheWrite && (w == routing.WireAnthropic || w == routing.WireBedrock) {
		miss = append(miss, "cache_write_micros")
	}
	return strings.Join(miss, ", ")
}
