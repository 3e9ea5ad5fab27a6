package provider

import (
	"google.golang.org/protobuf/proto"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/compile"
	"weir.dev/routing/formats"
	"weir.dev/routing/rules"
)

// Limits the admin API holds requests to besides the record rules of
// compile.CheckRecord.
const maxNameLen = rules.MaxNameLen

// Record is a provider record as validation, resolution and warnings see
// it: the record's own settings and, for a pool, its members. It is the
// state a change would produce, not the request that asks for it.
type Record struct {
	// Name is the record's name.
	Name string
	// Managed is true for a record owned by cluster admins (tenant empty).
	Managed bool
	// Pool is true when the record's members are its endpoints; a plain
	// record has its own base_url and no members.
	Pool bool
	// Spec is every setting of the record.
	Spec *adminv1.ProviderSpec
	// Members are the pool's members in any order; empty for a plain record.
	Members []*Member

	// preset is the stored name of the preset the record was created (or
	// last re-preset) with, for information.
	preset string

	// Where the record's fields came from in the request, so that problems
	// name request fields; see the field methods.
	namePath    string // default "name"
	specPath    string // default "spec"
	membersPath string // default "members"
	// fieldMap, when set, rewrites the field path of every problem
	// Validate finds (for requests whose fields do not mirror a spec).
	fieldMap func(string) string
}

// Member is one pool member as validation, resolution and warnings see it.
type Member struct {
	Name string
	Spec *adminv1.PoolMemberSpec

	// preset is the stored name of the member's preset, for information.
	preset string

	// Where the member's fields came from in the request; see the field
	// methods. A member the request does not mention is named by its name,
	// "members[<name>]".
	namePath string
	specPath string
}

// nameField is the request field that holds the record's name.
func (r *Record) nameField() string {
	if r.namePath != "" {
		return r.namePath
	}
	return "name"
}

// specField is the request path of a field of the record's spec.
func (r *Record) specField(parts ...string) string {
	prefix := r.specPath
	if prefix == "" {
		prefix = "spec"
	}
	return join(append([]string{prefix}, parts...)...)
}

// membersField is the request field that holds the members as a whole.
func (r *Record) membersField() string {
	if r.membersPath != "" {
		return r.membersPath
	}
	return "members"
}

// nameField is the request field that holds the member's name.
func (m *Member) nameField() string {
	if m.namePath != "" {
		return m.namePath
	}
	return "members" + key(m.Name) + ".name"
}

// specField is the request path of a field of the member's spec.
func (m *Member) specField(parts ...string) string {
	prefix := m.specPath
	if prefix == "" {
		prefix = "members" + key(m.Name) + ".spec"
	}
	return join(append([]string{prefix}, parts...)...)
}

// clusterOwned reports whether the record may use plain http and literal
// private addresses (R-SEC-2): managed or internal records.
func (r *Record) clusterOwned() bool {
	return r.Managed || r.Spec.GetInternal()
}

// member returns the member of that name, or nil.
func (r *Record) member(name string) *Member {
	for _, m := range r.Members {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// clone returns a deep copy of r, so a change can be built without touching
// the stored state it started from.
func (r *Record) clone() *Record {
	out := &Record{Name: r.Name, Managed: r.Managed, Pool: r.Pool, Spec: cloneSpec(r.Spec), preset: r.preset,
		namePath: r.namePath, specPath: r.specPath, membersPath: r.membersPath, fieldMap: r.fieldMap}
	for _, m := range r.Members {
		out.Members = append(out.Members, &Member{Name: m.Name, Spec: cloneMemberSpec(m.Spec), preset: m.preset,
			namePath: m.namePath, specPath: m.specPath})
	}
	return out
}

func cloneSpec(s *adminv1.ProviderSpec) *adminv1.ProviderSpec {
	if s == nil {
		return &adminv1.ProviderSpec{}
	}
	return proto.Clone(s).(*adminv1.ProviderSpec)
}

func cloneMemberSpec(s *adminv1.PoolMemberSpec) *adminv1.PoolMemberSpec {
	if s == nil {
		return &adminv1.PoolMemberSpec{}
	}
	return proto.Clone(s).(*adminv1.PoolMemberSpec)
}

func cloneAuth(a *configv1.Auth) *configv1.Auth {
	if a == nil {
		return nil
	}
	return proto.Clone(a).(*configv1.Auth)
}

// memberHasOwnAuth reports whether a member's auth replaces the record's:
// it names a kind or a header (ROUTING.md "Member").
func memberHasOwnAuth(a *configv1.Auth) bool { return compile.MemberOwnsAuth(a) }

// defaultKeyHeader is the header an API key goes in when the auth names
// none: the one each wire format's own API reads. The edge applies the same
// default (compile.defaultKeyHeader).
func defaultKeyHeader(w configv1.WireFormat) string {
	switch w {
	case configv1.WireFormat_WIRE_FORMAT_ANTHROPIC:
		return "x-api-key"
	case configv1.WireFormat_WIRE_FORMAT_GEMINI:
		return "x-goog-api-key"
	}
	return "authorization"
}

// WireName is the stored name of a wire format ("openai", ...), or "" for
// an unspecified or unknown one (formats.WireFormats).
func WireName(w configv1.WireFormat) string { return formats.WireFormats.Stored(w) }

// authKindName is the stored name of an auth kind ("api_key", ...), or ""
// for an unspecified or unknown one (formats.AuthKinds).
func authKindName(k configv1.AuthKind) string { return formats.AuthKinds.Stored(k) }
