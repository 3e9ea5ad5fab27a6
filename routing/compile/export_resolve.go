package compile

import (
	configv1 "weir.dev/proto/gen/weir/config/v1"

	"weir.dev/routing"
)

// This file exports, for the control plane's views of a record (`weir
// provider show`, the doctor), what the compiler resolves, so that no
// inheritance or default rule is restated outside this package.

// Resolve is Record for a record that may break rules: it returns the record
// compiled as far as the compiler gets, with the problems Record would refuse
// it for (nil when there are none). The conversion checks nothing, so a
// field a problem is about is as given (an unknown wire format or auth kind
// as none); everything else is resolved as for a record without problems. The edges never route over
// such a record: Compile refuses the snapshot that holds it.
func Resolve(r *configv1.ProviderRecord, managed bool) (*routing.Record, []*Problem) {
	var ps problems
	c := &compiler{ps: &ps, tenantID: r.GetTenantId()}
	where := objectWhere("record", r.GetName(), 0)
	c.checkRecord(where, r, managed)
	rec := c.record(where, r, managed)
	return rec, Problems(ps.err(r.GetTenantId()))
}

// DeclaredAccount is the account member m of record r declares (R-ORDER-4):
// its own when the optional field is present, else the record's; "" when it
// declares none. m nil means a plain record's own member, which takes the
// record's. The compiled member's Account is this when it is not "", else a
// fallback the compiler derives (see routing.Member.Account).
func DeclaredAccount(r *configv1.ProviderRecord, m *configv1.Member) string {
	if m == nil {
		return r.GetAccount()
	}
	return inherit(m.Account, r.GetAccount())
}
