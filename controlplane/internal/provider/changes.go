package provider

import (
	"slices"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

// Changes lists every field whose value differs between two states of a
// record, for a preview before saving (weir.admin.v1.Change); before nil is
// a record that does not exist yet, after is never nil. Neither record is
// changed.
//
// Fields are named as Problem.field names request fields: "name" (only for
// a record created), "preset", "spec.region", "spec.auth.header",
// "spec.prices[gpt-4o]" (list elements keyed by their model or name),
// "spec.tags[team]" (map entries), "members[eu].spec.weight",
// "members[eu].preset", and "members[eu]" for a whole member added or
// removed. The spec messages are walked by proto reflection, so a field
// added to ProviderSpec or PoolMemberSpec is listed without being named
// here; singular sub-messages (auth, limits, recovery) are compared field by
// field.
//
// Values are one line of text each: "" when unset (proto3 zero values count
// as unset, as ProviderSpec says); `""` for an optional field present but
// empty (a member's region "" is not the record's); booleans true/false;
// enums by their short lower-case name ("api_key"); durations as Go
// durations ("3s"); prices by part ("in 2500000, out 10000000, cache read
// 250000", micro-dollars per million tokens); lists comma-joined; maps
// "k=v" sorted by key; a whole member as its set fields, "; "-joined. Only
// fields whose text differs are listed, sorted by field. Specs name secrets
// and never hold their values; a URL's password, should one be given by
// mistake, is masked.
func Changes(before, after *Record) []*adminv1.Change {
	var d differ
	if before == nil {
		before = &Record{}
		d.add("name", "", after.Name)
	}
	d.add("preset", before.preset, after.preset)
	d.fields("spec", before.Spec.ProtoReflect(), after.Spec.ProtoReflect())
	d.members(before, after)
	slices.SortStableFunc(d.out, func(a, b *adminv1.Change) int { return strings.Compare(a.GetField(), b.GetField()) })
	return d.out
}

// differ collects the changes of one Changes call.
type differ struct {
	out []*adminv1.Change
}

// add lists field when its text differs.
func (d *differ) add(field, before, after string) {
	if before != after {
		d.out = append(d.out, &adminv1.Change{Field: field, Before: before, After: after})
	}
}

// members compares the members of both records by name: a member on one
// side only is one change naming the whole member, a member on both is
// compared field by field.
func (d *differ) members(before, after *Record) {
	var names []string
	for _, m := range slices.Concat(before.Members, after.Members) {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		path := "members" + key(name)
		b, a := before.member(name), after.member(name)
		switch {
		case b == nil:
			d.add(path, "", memberText(a))
		case a == nil:
			d.add(path, memberText(b), "")
		default:
			d.add(path+".preset", b.preset, a.preset)
			d.fields(path+".spec", b.Spec.ProtoReflect(), a.Spec.ProtoReflect())
		}
	}
}

// fields compares every field of two messages of one type, under path. A
// nil message (its reflection not valid) reads as one with nothing set.
func (d *differ) fields(path string, b, a protoreflect.Message) {
	fds := a.Descriptor().Fields()
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		p := join(path, string(fd.Name()))
		switch {
		case fd.IsMap():
			d.mapEntries(p, fd, b, a)
		case fd.IsList() && keyOf(fd.Message()) != nil:
			d.keyedElements(p, fd, b, a)
		case fd.Message() != nil && !fd.IsList() && !leafMessage(fd.Message()):
			d.fields(p, b.Get(fd).Message(), a.Get(fd).Message())
		default:
			d.add(p, fieldText(b, fd), fieldText(a, fd))
		}
	}
}

// mapEntries compares a map field entry by entry: path[key].
func (d *differ) mapEntries(path string, fd protoreflect.FieldDescriptor, b, a protoreflect.Message) {
	d.byKey(path, mapTexts(fd, b.Get(fd).Map()), mapTexts(fd, a.Get(fd).Map()))
}

// keyedElements compares a list of messages that have a key field (prices
// by model, models by name) element by element: path[key].
func (d *differ) keyedElements(path string, fd protoreflect.FieldDescriptor, b, a protoreflect.Message) {
	kf := keyOf(fd.Message())
	d.byKey(path, keyedTexts(b.Get(fd).List(), kf), keyedTexts(a.Get(fd).List(), kf))
}

// byKey compares two sets of texts by key, each listed as path[key].
func (d *differ) byKey(path string, before, after map[string]string) {
	var keys []string
	for k := range before {
		keys = append(keys, k)
	}
	for k := range after {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) {
		d.add(path+key(k), before[k], after[k])
	}
}

// keyOf is the field that identifies an element of a list of md: a string
// field named "model" (prices) or "name" (models); nil when md has none.
func keyOf(md protoreflect.MessageDescriptor) protoreflect.FieldDescriptor {
	if md == nil {
		return nil
	}
	for _, name := range []protoreflect.Name{"model", "name"} {
		if f := md.Fields().ByName(name); f != nil && f.Kind() == protoreflect.StringKind && !f.IsList() {
			return f
		}
	}
	return nil
}

// leafMessage reports whether a message is compared as one value
// (durations) rather than field by field.
func leafMessage(md protoreflect.MessageDescriptor) bool {
	return md.FullName() == durationName
}

var durationName = (&durationpb.Duration{}).ProtoReflect().Descriptor().FullName()

// memberText is a whole member on one line: its preset, then its spec's
// set fields.
func memberText(m *Member) string {
	var parts []string
	if m.preset != "" {
		parts = append(parts, "preset "+m.preset)
	}
	if s := fieldsText(m.Spec.ProtoReflect(), "; ", nil); s != "" {
		parts = append(parts, s)
	}
	return orEmptyMark(strings.Join(parts, "; "))
}

// orEmptyMark keeps something that is present from reading as unset ("").
func orEmptyMark(s string) string {
	if s == "" {
		return "(empty)"
	}
	return s
}
