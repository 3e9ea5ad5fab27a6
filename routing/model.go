package routing

import (
	"slices"
	"sort"
	"strings"
)

// Request describes one call as the routing core needs it.
type Request struct {
	Endpoint Endpoint
	// Model is the model as the caller named it, possibly "record/model"
	// (R-MODEL-1).
	Model string
	Key   *Key
	// Regions is the parsed x-weir-regions header (R-ELIG-3); nil when absent.
	Regions []string
	// JobID is the job or conversation id (R-STICK-2), "" when none.
	JobID string
	// LastMemberID is the member ("<record id>/<name>") that served the job's
	// last call, as known locally or through shared affinity (R-STICK-3).
	LastMemberID string
	// InputTokens is the edge's estimate of the call's input tokens.
	InputTokens int64
	// MaxOutput is the request's max_tokens / max_completion_tokens /
	// max_output_tokens, 0 when it names none (R-COST-1).
	MaxOutput int64
	// Features are the shape-changing features the body asks for
	// (R-FMT-3).
	Features Features
}

// splitPinned resolves "record/model" (R-MODEL-1): when the part before the
// first "/" names a record of the table that serves the rest, the call is
// pinned to that record. Otherwise the whole string is the model name, since
// model names may contain "/" themselves (e.g. "meta-llama/Llama-3-8B").
func (t *Table) splitPinned(model string) (*Record, string) {
	if i := strings.IndexByte(model, '/'); i > 0 {
		if r := t.byName[model[:i]]; r != nil {
			if _, ok := r.Models[model[i+1:]]; ok {
				return r, model[i+1:]
			}
		}
	}
	return nil, model
}

// endpointFits reports whether a record's model kind fits the endpoint
// (R-MODEL-2 first step): a chat model through any chat endpoint, whatever
// the wire format (§11); an embeddings model only through /v1/embeddings,
// on a record with a member that can answer it (openai or gemini, R-FMT-7).
func endpointFits(e Endpoint, r *Record, model string) bool {
	kind := r.Models[model]
	switch e {
	case EndpointMessages, EndpointChatCompletions, EndpointResponses:
		return kind == KindChat
	case EndpointEmbeddings:
		if kind != KindEmbeddings {
			return false
		}
		for _, m := range r.Members {
			if m.Format().ServesEndpoint(e) {
				return true
			}
		}
	}
	return false
}

// keyAllowsRecord applies the key's record and region restrictions to a
// whole record (R-MODEL-2 third step): the record must be listed when the key
// lists records, and some member must be in the key's regions when the key
// has regions.
func keyAllowsRecord(k *Key, r *Record) bool {
	if k == nil {
		return true
	}
	if len(k.AllowedRecords) > 0 && !k.AllowedRecords[r.Name] {
		return false
	}
	if len(k.Regions) == 0 {
		return true
	}
	for _, m := range r.Members {
		if regionAllowed(m.Region, k.Regions) {
			return true
		}
	}
	return false
}

// Candidates returns the records a call may use, best first, with the model
// name stripped of any record pin (R-MODEL-1…4). When no record is left, the
// error is the one of the step that left none (R-MODEL-2).
func (t *Table) Candidates(req *Request) ([]*Record, string, *Error) {
	pinned, model := t.splitPinned(req.Model)
	var recs []*Record
	if pinned != nil {
		recs = []*Record{pinned}
	} else {
		recs = t.byModel[model]
	}
	if len(recs) == 0 {
		return nil, model, newError(404, CodeModelNotAvailable, "model "+quote(model)+" is not available")
	}
	// R-MODEL-3: own records first; managed ones only when the tenant has no
	// own record for the model.
	if own := keepRecords(recs, func(r *Record) bool { return !r.Managed }); len(own) > 0 {
		recs = own
	}
	steps := []struct {
		keep func(*Record) bool
		err  func() *Error
	}{
		{func(r *Record) bool { return endpointFits(req.Endpoint, r, model) }, func() *Error {
			return newError(400, CodeWrongEndpoint, "model "+quote(model)+" cannot be called through "+req.Endpoint.String())
		}},
		{func(*Record) bool {
			return req.Key == nil || len(req.Key.AllowedModels) == 0 || req.Key.AllowedModels[model]
		}, func() *Error {
			return newError(403, CodeModelNotAllowed, "this API key may not call model "+quote(model))
		}},
		{func(r *Record) bool { return keyAllowsRecord(req.Key, r) }, func() *Error {
			return newError(403, CodeProviderNotAllowed, "this API key may not use any provider serving "+quote(model))
		}},
	}
	for _, s := range steps {
		kept := keepRecords(recs, s.keep)
		if len(kept) == 0 {
			return nil, model, s.err()
		}
		recs = kept
	}
	if len(recs) > 1 {
		// recs may still be the table's own slice: sort a copy.
		recs = slices.Clone(recs)
		SortRecords(recs, model)
	}
	return recs, model, nil
}

// keepRecords returns the records of recs that keep keeps, in order: recs
// itself (capped, so that an append copies) when it keeps them all, else
// a new slice. recs is never changed: it may be the table's.
func keepRecords(recs []*Record, keep func(*Record) bool) []*Record {
	for i, r := range recs {
		if keep(r) {
			continue
		}
		out := make([]*Record, i, len(recs)-1)
		copy(out, recs[:i])
		for _, r := range recs[i+1:] {
			if keep(r) {
				out = append(out, r)
			}
		}
		return out
	}
	return recs[:len(recs):len(recs)]
}

// recordPrice is the price a record is ranked by for a model (R-MODEL-4):
// 3 × input + output per million tokens at the dearest member, so a pool is
// never ranked cheaper than the member a call may land on. ok is false when
// the record is unpriced for the model: some member has no whole price.
func recordPrice(r *Record, model string) (score int64, ok bool) {
	n := 0
	for _, m := range r.Members {
		if !m.Serves(model) {
			continue
		}
		n++
		p, has := m.Prices[model]
		if !has || !p.HasInput || !p.HasOutput {
			return 0, false
		}
		if s := 3*int64(p.Input) + int64(p.Output); s > score {
			score = s
		}
	}
	return score, n > 0
}

// Priced reports whether the record is priced for the model (R-COST-1): every
// member serving it has a whole price for it.
func (r *Record) Priced(model string) bool {
	_, ok := recordPrice(r, model)
	return ok
}

// SortRecords orders candidates by R-MODEL-4: priced before unpriced; then
// cheaper by 3 × input + output; then lower priority value first; then older
// record first; then name, so the order is deterministic.
func SortRecords(recs []*Record, model string) {
	sort.SliceStable(recs, func(i, j int) bool {
		a, b := recs[i], recs[j]
		pa, oka := recordPrice(a, model)
		pb, okb := recordPrice(b, model)
		if oka != okb {
			return oka
		}
		if oka && pa != pb {
			return pa < pb
		}
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt)
		}
		return a.Name < b.Name
	})
}

func quote(s string) string {
	if len(s) > 128 {
		s = s[:128] + "…"
	}
	return "\"" + s + "\""
}
