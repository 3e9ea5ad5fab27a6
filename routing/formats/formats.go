// Package formats is the one table of the names Weir gives its wire formats
// and auth kinds. Each has three spellings, and every place that writes or
// reads one goes through this table, so the spellings cannot drift apart:
//
//   - the enum value of weir.config.v1 (configv1.WireFormat, configv1.AuthKind),
//     what the snapshot and the admin API carry;
//   - the stored name: the value of the provider_records.wire_format and the
//     records' and members' auth_kind columns, also the name problem texts
//     use ("the auth kind is api_key");
//   - the word people type and read: the CLI's flag values and `--output
//     json` (`--auth-kind api-key`) and the console's forms.
//
// Wire formats are spelled the same in all three places; auth kinds differ
// only in their separator (api_key stored, api-key typed). The unspecified
// enum value has no entry: it has no name and no word.
//
// The package holds data only and depends on the generated protobuf types
// alone, so the control plane, the edge and the console views can all link
// it. It is part of the configuration contract of module weir.dev/routing.
package formats

import (
	"slices"
	"strings"

	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// Entry is the names of one enum value.
type Entry[E ~int32] struct {
	// Enum is the value in weir.config.v1.
	Enum E
	// Stored is the name in the database and in problem texts.
	Stored string
	// Word is the name the CLI and the console take and show.
	Word string
	// Summary says in a few words what the value is, for labels (a form's
	// choices); "" when the word says it all.
	Summary string
}

// Table is the entries of one enum type, in the enum's declaration order.
// Its lookups compare exactly (names are lower case and case matters).
type Table[E ~int32] struct {
	entries []Entry[E]
}

// WireFormats are the wire formats: the upstream API a record speaks.
var WireFormats = Table[configv1.WireFormat]{entries: []Entry[configv1.WireFormat]{
	{Enum: configv1.WireFormat_WIRE_FORMAT_OPENAI, Stored: "openai", Word: "openai"},
	{Enum: configv1.WireFormat_WIRE_FORMAT_ANTHROPIC, Stored: "anthropic", Word: "anthropic"},
	{Enum: configv1.WireFormat_WIRE_FORMAT_BEDROCK, Stored: "bedrock", Word: "bedrock"},
	{Enum: configv1.WireFormat_WIRE_FORMAT_GEMINI, Stored: "gemini", Word: "gemini"},
}}

// AuthKinds are the auth kinds: how the edge authenticates to an endpoint.
var AuthKinds = Table[configv1.AuthKind]{entries: []Entry[configv1.AuthKind]{
	{Enum: configv1.AuthKind_AUTH_KIND_API_KEY, Stored: "api_key", Word: "api-key", Summary: "API key in a header"},
	{Enum: configv1.AuthKind_AUTH_KIND_SIGV4, Stored: "sigv4", Word: "sigv4", Summary: "AWS Signature V4"},
	{Enum: configv1.AuthKind_AUTH_KIND_OAUTH2, Stored: "oauth2", Word: "oauth2", Summary: "OAuth2 client credentials"},
	{Enum: configv1.AuthKind_AUTH_KIND_NONE, Stored: "none", Word: "none"},
	{Enum: configv1.AuthKind_AUTH_KIND_GOOGLE_SERVICE_ACCOUNT, Stored: "google_service_account", Word: "google-service-account", Summary: "Google service account key (JWT grant)"},
}}

// All returns every entry, in declaration order (a copy).
func (t Table[E]) All() []Entry[E] { return slices.Clone(t.entries) }

// ByEnum returns the entry of e; false for the unspecified value and for a
// value this build does not know.
func (t Table[E]) ByEnum(e E) (Entry[E], bool) {
	return t.find(func(x Entry[E]) bool { return x.Enum == e })
}

// ByStored returns the entry whose stored name is s; false for any other s.
func (t Table[E]) ByStored(s string) (Entry[E], bool) {
	return t.find(func(x Entry[E]) bool { return x.Stored == s })
}

// ByWord returns the entry whose word is s; false for any other s.
func (t Table[E]) ByWord(s string) (Entry[E], bool) {
	return t.find(func(x Entry[E]) bool { return x.Word == s })
}

// Stored returns the stored name of e, or "" when ByEnum has no entry.
func (t Table[E]) Stored(e E) string {
	x, _ := t.ByEnum(e)
	return x.Stored
}

// Word returns the word of e, or "" when ByEnum has no entry.
func (t Table[E]) Word(e E) string {
	x, _ := t.ByEnum(e)
	return x.Word
}

// ParseStored returns the value whose stored name is s; the zero
// (unspecified) value and false for any other s.
func (t Table[E]) ParseStored(s string) (E, bool) {
	x, ok := t.ByStored(s)
	return x.Enum, ok
}

// ParseWord returns the value whose word is s; the zero (unspecified) value
// and false for any other s.
func (t Table[E]) ParseWord(s string) (E, bool) {
	x, ok := t.ByWord(s)
	return x.Enum, ok
}

// StoredNames returns every stored name, in declaration order.
func (t Table[E]) StoredNames() []string {
	out := make([]string, len(t.entries))
	for i, x := range t.entries {
		out[i] = x.Stored
	}
	return out
}

// StoredChoices returns the stored names as problem texts list them:
// "openai, anthropic or bedrock".
func (t Table[E]) StoredChoices() string {
	names := t.StoredNames()
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func (t Table[E]) find(match func(Entry[E]) bool) (Entry[E], bool) {
	if i := slices.IndexFunc(t.entries, match); i >= 0 {
		return t.entries[i], true
	}
	return Entry[E]{}, false
}
