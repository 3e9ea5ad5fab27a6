package compile

import (
	"slices"
	"strconv"
	"strings"

	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// recordPrices checks the record's own prices and indexes them by model.
// Whether they are whole is checked per endpoint, after merging.
func (v *recordChecker) recordPrices() {
	v.recPrices = map[string]*configv1.Price{}
	for i, p := range v.r.GetPrices() {
		l := recordLoc.at("prices", idx(i))
		model := p.GetModel()
		if _, ok := v.models[model]; !ok {
			v.add(l.at("model"), CodeNotAModel, "%s is not a model of the record", strconv.Quote(model))
		}
		if _, dup := v.recPrices[model]; dup {
			v.add(l.at("model"), CodeDuplicate, "the model %s is priced twice", strconv.Quote(model))
			continue
		}
		v.priceSigns(l, p)
		if p.InputMicros == nil {
			v.add(l.at("input_micros"), CodeRequired, "missing: a record's price gives input and output")
		}
		if p.OutputMicros == nil {
			v.add(l.at("output_micros"), CodeRequired, "missing: a record's price gives input and output")
		}
		v.recPrices[model] = p
	}
}

// priceSigns reports every negative part of a price.
func (v *recordChecker) priceSigns(l loc, p *configv1.Price) {
	for _, part := range priceParts {
		if x := *part.ptr(p); x != nil && *x < 0 {
			v.add(l.at(part.field), CodeNegative, "must not be negative, got %d", *x)
		}
	}
}

// memberPrices checks the member's own prices — each of a model it serves
// (served, nil for all the record's), once, giving some part, none
// negative — then every price it ends up with (mergedPrices).
func (v *recordChecker) memberPrices(l loc, m *configv1.Member, served map[string]bool) {
	seen := map[string]bool{}
	for i, p := range m.GetPrices() {
		pl := l.at("prices", idx(i))
		model := p.GetModel()
		if _, ok := v.models[model]; !ok {
			v.add(pl.at("model"), CodeNotAModel, "%s is not a model of the record", strconv.Quote(model))
		} else if served != nil && !served[model] {
			v.add(pl.at("model"), CodeNotAModel, "%s is not among the member's models", strconv.Quote(model))
		}
		if seen[model] {
			v.add(pl.at("model"), CodeDuplicate, "the model %s is priced twice", strconv.Quote(model))
			continue
		}
		seen[model] = true
		if p.InputMicros == nil && p.OutputMicros == nil && p.CacheReadMicros == nil && p.CacheWriteMicros == nil {
			v.add(pl, CodeRequired, "gives no part: give input, output, cache read or cache write, or remove the price")
		}
		v.priceSigns(pl, p)
	}
	v.mergedPrices(l.at("prices"), l.member, served)
}

// mergedPrices checks that every price an endpoint ends up with for a
// model it serves is whole (R-COST-4): member is the index of the member,
// or -1 for a plain record's own endpoint; l is the owner's prices list.
func (v *recordChecker) mergedPrices(l loc, member int, served map[string]bool) {
	var own []*configv1.Price
	wire := v.r.GetWireFormat() // cache writes billed by the endpoint's own format
	if member >= 0 {
		own = v.r.GetMembers()[member].GetPrices()
		wire = v.memberWire(v.r.GetMembers()[member])
	}
	models := map[string]bool{}
	for model := range v.recPrices {
		models[model] = true
	}
	ownIndex := map[string]int{}
	for i, p := range own {
		models[p.GetModel()] = true
		if _, dup := ownIndex[p.GetModel()]; !dup {
			ownIndex[p.GetModel()] = i
		}
	}
	for _, model := range sortedKeys(models) {
		if _, ok := v.models[model]; !ok || (served != nil && !served[model]) {
			continue // reported where the price is, or never charged here
		}
		var ownPrice *configv1.Price
		at := l
		if i, ok := ownIndex[model]; ok {
			ownPrice, at = own[i], l.at(idx(i))
		} else if member < 0 {
			at = l.at(idx(slices.IndexFunc(v.r.GetPrices(), func(p *configv1.Price) bool { return p.GetModel() == model })))
		}
		recPrice, recordHas := v.recPrices[model]
		missing := missingParts(mergePrice(recPrice, ownPrice), wire)
		if missing == "" {
			continue
		}
		v.add(at, CodePriceNotWhole, "%s", notWholeMsg(strconv.Quote(model), missing, member < 0, recordHas, ownPrice != nil))
	}
}

// notWholeMsg says why a merged price is not whole. The messages speak of
// the parts as people name them (the CLI's --price M=IN,OUT,CR,CW, the
// console's columns), never in proto field names; the path says where.
func notWholeMsg(model, missing string, plain, recordHas, memberGives bool) string {
	switch {
	case plain:
		return sprintf("the price of %s lacks %s: a price must be whole, or those tokens would cost nothing (R-COST-4); give 0 for a part the provider does not charge", model, missing)
	case !recordHas:
		return sprintf("a member price must be whole when the record has no price for %s: it lacks %s, and those tokens would cost nothing (R-COST-4); give them (0 for a part the provider does not charge), or price the model on the record", model, missing)
	case memberGives:
		return sprintf("the price of %s lacks %s even with the record's price for it: a price must be whole, or those tokens would cost nothing (R-COST-4)", model, missing)
	}
	return sprintf("the price of %s lacks %s: the record's price lacks it and the member gives none, and those tokens would cost nothing (R-COST-4)", model, missing)
}

// pricePart names one part of a price and reaches its field.
type pricePart struct {
	field string // proto field name
	words string // as people name it
	ptr   func(*configv1.Price) **int64
}

var priceParts = []pricePart{
	{"input_micros", "input", func(p *configv1.Price) **int64 { return &p.InputMicros }},
	{"output_micros", "output", func(p *configv1.Price) **int64 { return &p.OutputMicros }},
	{"cache_read_micros", "cache read", func(p *configv1.Price) **int64 { return &p.CacheReadMicros }},
	{"cache_write_micros", "cache write", func(p *configv1.Price) **int64 { return &p.CacheWriteMicros }},
}

// mergePrice returns the record's price with every part the member's gives
// replacing the record's (R-COST-4); either may be nil.
func mergePrice(rec, own *configv1.Price) *configv1.Price {
	out := &configv1.Price{}
	for _, f := range priceParts {
		for _, p := range []*configv1.Price{own, rec} {
			if p != nil && *f.ptr(p) != nil {
				x := **f.ptr(p)
				*f.ptr(out) = &x
				break
			}
		}
	}
	return out
}

// missingParts names the parts a price lacks to be whole on a wire format,
// in words ("cache read and cache write"), or "" when it is whole: input,
// output, cache read, and cache write on the formats that bill cache writes.
func missingParts(p *configv1.Price, w configv1.WireFormat) string {
	var miss []string
	for _, f := range priceParts {
		if *f.ptr(p) != nil {
			continue
		}
		if f.field == "cache_write_micros" && !billsCacheWrites(w) {
			continue
		}
		miss = append(miss, f.words)
	}
	switch len(miss) {
	case 0:
		return ""
	case 1:
		return miss[0]
	}
	return strings.Join(miss[:len(miss)-1], ", ") + " and " + miss[len(miss)-1]
}

// billsCacheWrites reports whether a wire format's providers charge for
// writing the prompt cache, so a whole price must say what it costs.
func billsCacheWrites(w configv1.WireFormat) bool {
	return w == configv1.WireFormat_WIRE_FORMAT_ANTHROPIC || w == configv1.WireFormat_WIRE_FORMAT_BEDROCK
}
