package provider

import (
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/compile"
)

// Env is what validation and warnings need to know besides the record.
type Env struct {
	// Secrets maps the name of each secret of the record's owner (the
	// tenant's secrets, or the cluster's for a managed record) to the hosts
	// it is bound to. nil skips the check that named secrets exist and the
	// secret_host_mismatch warning; an empty non-nil map means the owner has
	// none.
	Secrets map[string][]string
	// Rules are the owning tenant's data rules, for the rules_refuse_all
	// warning; nil skips it (managed records, which many tenants share, are
	// never checked).
	Rules *configv1.DataRules
}

// Validate checks the whole record r would be after a change and returns
// nil, or an error wrapping ErrInvalid and one *Problem for every rule it
// breaks (never just the first). It does not change r.
//
// The rules are the edge's: the record, as the snapshot would carry it
// (Record.ConfigRecord), goes through compile.CheckRecord, the one statement
// of the config format's record rules that every edge's compiler applies
// too; so the control plane never accepts a record an edge would refuse.
// Each problem is then named by the request field it came from. What only
// the admin API asks on top is asked through compile.RecordRules: the
// record names its auth kind, a pool stays a pool without members, and
// every secret it names exists in its owner's scope (when env.Secrets is
// given).
func Validate(r *Record, env Env) error {
	rules := compile.RecordRules{ClusterOwned: r.clusterOwned(), Pool: r.Pool, NamedAuthKind: true, SecretScope: "the tenant's secrets"}
	if r.Managed {
		rules.SecretScope = "the cluster's secrets"
	}
	if env.Secrets != nil {
		rules.SecretKnown = func(name string) bool { _, ok := env.Secrets[name]; return ok }
	}
	var ps problems
	for _, p := range compile.CheckRecord(r.ConfigRecord(), rules) {
		field := r.requestField(p.Member, p.Field)
		if r.fieldMap != nil {
			field = r.fieldMap(field)
		}
		ps.add(field, p.Code, "%s", p.Msg)
	}
	return ps.err()
}

// requestField names the request field a problem of compile.CheckRecord
// came from: member is the index in r.Members (-1 for the record) and path
// the field's path within the record or member, in configv1 field names,
// which the admin specs share.
func (r *Record) requestField(member int, path string) string {
	if member >= 0 {
		m := r.Members[member]
		if path == "name" {
			return m.nameField()
		}
		return m.specField(path)
	}
	switch path {
	case "name":
		return r.nameField()
	case "members":
		return r.membersField()
	}
	return r.specField(path)
}
