package provider

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// ConfigRecord returns the record as the snapshot carries it to the edges
// (weir.config.v1.ProviderRecord), for the shared compiler: the spec's
// fields and each member's, copied by field name, members in r.Members
// order. It has no id, tenant or creation time (the compiler's per-record
// rules do not need them); the caller sets them when it has them.
func (r *Record) ConfigRecord() *configv1.ProviderRecord {
	out := &configv1.ProviderRecord{Name: r.Name, Managed: r.Managed}
	copySameNamed(out, r.Spec)
	for _, m := range r.Members {
		cm := &configv1.Member{Name: m.Name}
		copySameNamed(cm, m.Spec)
		out.Members = append(out.Members, cm)
	}
	return out
}

// specOf returns the admin API's spec of a record as the snapshot carries
// it (weir.config.v1, as recordrow decodes it from its rows): every spec
// field taken from its twin. What the spec has no field for (id, name,
// tenant, preset, members, creation time) is left out.
func specOf(r *configv1.ProviderRecord) *adminv1.ProviderSpec {
	out := &adminv1.ProviderSpec{}
	copyFromTwins(out, r)
	return out
}

// memberSpecOf is specOf for a member: every PoolMemberSpec field taken from
// its twin, the id and name left out.
func memberSpecOf(m *configv1.Member) *adminv1.PoolMemberSpec {
	out := &adminv1.PoolMemberSpec{}
	copyFromTwins(out, m)
	return out
}

// copySameNamed sets every populated field of src on the field of dst with
// the same name, deep-copying values. The admin API's specs and the config
// protos name their common fields alike (TestConfigRecordCoversSpec proves
// every spec field has its twin), so a field added to both travels without
// being named here. A field without a twin of the same type panics: that is
// a programming error the test catches first.
func copySameNamed(dst, src proto.Message) {
	if src == nil {
		return
	}
	d, s := dst.ProtoReflect(), src.ProtoReflect()
	if !s.IsValid() {
		return
	}
	s.Range(func(f protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		df := twinField(d.Descriptor(), f)
		if df == nil {
			panic(fmt.Sprintf("%s.%s has no twin in %s", f.ContainingMessage().FullName(), f.Name(), d.Descriptor().FullName()))
		}
		d.Set(df, cloneValue(d, df, v))
		return true
	})
}

// copyFromTwins is copySameNamed the other way: it sets every field of dst
// (an admin spec) whose twin in src (its config proto) is populated,
// deep-copying values; src's fields without a twin in dst are left out. A
// field of dst without a twin panics, as in copySameNamed.
func copyFromTwins(dst, src proto.Message) {
	d, s := dst.ProtoReflect(), src.ProtoReflect()
	if !s.IsValid() {
		return
	}
	fs := d.Descriptor().Fields()
	for i := 0; i < fs.Len(); i++ {
		f := fs.Get(i)
		sf := twinField(s.Descriptor(), f)
		if sf == nil {
			panic(fmt.Sprintf("%s.%s has no twin in %s", f.ContainingMessage().FullName(), f.Name(), s.Descriptor().FullName()))
		}
		if s.Has(sf) {
			d.Set(f, cloneValue(d, f, s.Get(sf)))
		}
	}
}

// twinField returns dst's field with f's name and the same shape (kind,
// cardinality, message or enum type, map-ness), or nil.
func twinField(dst protoreflect.MessageDescriptor, f protoreflect.FieldDescriptor) protoreflect.FieldDescriptor {
	df := dst.Fields().ByName(f.Name())
	if df == nil || df.Kind() != f.Kind() || df.Cardinality() != f.Cardinality() || df.IsMap() != f.IsMap() || df.HasPresence() != f.HasPresence() {
		return nil
	}
	switch {
	case f.IsMap():
		if df.MapKey().Kind() != f.MapKey().Kind() || df.MapValue().Kind() != f.MapValue().Kind() {
			return nil
		}
	case f.Message() != nil:
		if df.Message().FullName() != f.Message().FullName() {
			return nil
		}
	case f.Enum() != nil:
		if df.Enum().FullName() != f.Enum().FullName() {
			return nil
		}
	}
	return df
}

// cloneValue deep-copies v for dst's field df, so dst shares no memory with
// the source.
func cloneValue(dst protoreflect.Message, df protoreflect.FieldDescriptor, v protoreflect.Value) protoreflect.Value {
	switch {
	case df.IsList():
		out := dst.NewField(df).List()
		in := v.List()
		for i := 0; i < in.Len(); i++ {
			e := in.Get(i)
			if df.Message() != nil {
				e = protoreflect.ValueOfMessage(proto.Clone(e.Message().Interface()).ProtoReflect())
			}
			out.Append(e)
		}
		return protoreflect.ValueOfList(out)
	case df.IsMap():
		out := dst.NewField(df).Map()
		v.Map().Range(func(k protoreflect.MapKey, e protoreflect.Value) bool {
			if df.MapValue().Message() != nil {
				e = protoreflect.ValueOfMessage(proto.Clone(e.Message().Interface()).ProtoReflect())
			}
			out.Set(k, e)
			return true
		})
		return protoreflect.ValueOfMap(out)
	case df.Message() != nil:
		return protoreflect.ValueOfMessage(proto.Clone(v.Message().Interface()).ProtoReflect())
	}
	return v
}
