package compile

import (
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// The record rules the control plane needs besides CheckRecord, exported so
// that it states none of them again.

// MemberOwnsAuth reports whether a member's auth replaces its record's as a
// whole: it names a kind or a header (ROUTING.md "Member"). Otherwise the
// member signs with the record's auth.
func MemberOwnsAuth(a *configv1.Auth) bool { return ownsAuth(a) }

// AuthHasFields reports whether an auth sets anything besides its kind and
// header.
func AuthHasFields(a *configv1.Auth) bool { return authHasFields(a) }

// MergePrice returns the record's price for a model with every part the
// member's price gives replacing the record's (R-COST-4); either may be
// nil. The result shares no memory with them.
func MergePrice(record, member *configv1.Price) *configv1.Price {
	out := mergePrice(record, member)
	out.Model = member.GetModel()
	if out.Model == "" {
		out.Model = record.GetModel()
	}
	return out
}

// PriceGaps names, in words ("cache read and cache write"), the parts a
// price lacks to be whole on a wire format, or returns "" when it is whole:
// input, output, cache read, and cache write on the formats whose providers
// bill cache writes (R-COST-4).
func PriceGaps(p *configv1.Price, w configv1.WireFormat) string { return missingParts(p, w) }
