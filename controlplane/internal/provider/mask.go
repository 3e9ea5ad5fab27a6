package provider

import (
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Fields of ProviderSpec and PoolMemberSpec an update mask may reach one
// level into (provider_types.proto, UpdateProviderRequest and
// UpdatePoolMemberRequest).
var (
	recordNested = map[string]bool{"auth": true, "limits": true, "recovery": true}
	memberNested = map[string]bool{"auth": true, "limits": true}
)

// applyMask changes dst as the update mask paths say, taking values from
// src, and returns the problems of the mask (field names it with maskField,
// e.g. "update_mask"). dst and src are messages of the same type; src is
// not changed and dst shares no memory with it afterwards.
//
// A path is a field name of the message, or one level into a nested
// message field named in nested ("auth.header"), or "*" for the whole
// message. A path whose field is set in src (a scalar that is not zero, an
// optional field that is present, a message that is present, a list or map
// that is not empty) sets it in dst; one whose field is unset in src clears
// it in dst, back to "not set". Lists and maps are replaced whole.
func applyMask(dst, src proto.Message, paths []string, nested map[string]bool, maskField string) error {
	var ps problems
	src = proto.Clone(src)
	d, s := dst.ProtoReflect(), src.ProtoReflect()
	fields := d.Descriptor().Fields()
	for i, p := range paths {
		field := maskField + ".paths" + idx(i)
		if p == "*" {
			proto.Reset(dst)
			proto.Merge(dst, proto.Clone(src))
			continue
		}
		head, tail, isNested := strings.Cut(p, ".")
		fd := fields.ByName(protoreflect.Name(head))
		if fd == nil || (isNested && (!nested[head] || fd.Message() == nil)) {
			ps.add(field, CodeUnknownPath, "unknown path %s", strconv.Quote(p))
			continue
		}
		if !isNested {
			if s.Has(fd) {
				d.Set(fd, s.Get(fd))
			} else {
				d.Clear(fd)
			}
			continue
		}
		sub := fd.Message().Fields().ByName(protoreflect.Name(tail))
		if sub == nil {
			ps.add(field, CodeUnknownPath, "unknown path %s", strconv.Quote(p))
			continue
		}
		var from protoreflect.Message
		if s.Has(fd) {
			from = s.Get(fd).Message()
		}
		if from != nil && from.Has(sub) {
			d.Mutable(fd).Message().Set(sub, from.Get(sub))
		} else if d.Has(fd) {
			d.Mutable(fd).Message().Clear(sub)
		}
	}
	return ps.err()
}
