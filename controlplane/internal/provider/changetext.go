package provider

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// This file renders spec values as the one-line texts of Changes.

// fieldText is field fd of m as one line, "" when m does not have it (a
// proto3 zero value, an absent optional field, an empty list or map).
func fieldText(m protoreflect.Message, fd protoreflect.FieldDescriptor) string {
	if !m.Has(fd) {
		return ""
	}
	return valueText(fd, m.Get(fd))
}

// valueText is the whole value of field fd: a list comma-joined, a map as
// "k=v" pairs by key, else the one value.
func valueText(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	switch {
	case fd.IsMap():
		texts := mapTexts(fd, v.Map())
		keys := make([]string, 0, len(texts))
		for k := range texts {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			keys[i] = k + "=" + texts[k]
		}
		return strings.Join(keys, ", ")
	case fd.IsList():
		l, kf := v.List(), keyOf(fd.Message())
		parts := make([]string, l.Len())
		for i := range parts {
			parts[i] = elementText(fd, l.Get(i), kf)
		}
		return strings.Join(parts, ", ")
	}
	return presentText(fd, v)
}

// mapTexts is each entry of a map field as text, by key.
func mapTexts(fd protoreflect.FieldDescriptor, m protoreflect.Map) map[string]string {
	out := make(map[string]string, m.Len())
	m.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		out[k.String()] = presentText(fd.MapValue(), v)
		return true
	})
	return out
}

// keyedTexts is each element of a list of keyed messages (keyOf) as text
// without its key, by key.
func keyedTexts(l protoreflect.List, kf protoreflect.FieldDescriptor) map[string]string {
	out := make(map[string]string, l.Len())
	for i := 0; i < l.Len(); i++ {
		m := l.Get(i).Message()
		out[m.Get(kf).String()] = orEmptyMark(fieldsText(m, ", ", kf))
	}
	return out
}

// elementText is one element of a list: a keyed message as its key with
// the rest in parentheses ("gpt-x (in 1, out 2)"), else its value.
func elementText(fd protoreflect.FieldDescriptor, v protoreflect.Value, kf protoreflect.FieldDescriptor) string {
	if kf == nil {
		return presentText(fd, v)
	}
	k := oneLine(kf, v.Message().Get(kf).String())
	if rest := fieldsText(v.Message(), ", ", kf); rest != "" {
		return k + " (" + rest + ")"
	}
	return k
}

// fieldsText is every field m has but skip, in declaration order, as
// "label value" joined by sep.
func fieldsText(m protoreflect.Message, sep string, skip protoreflect.FieldDescriptor) string {
	var parts []string
	fds := m.Descriptor().Fields()
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		if fd == skip || !m.Has(fd) {
			continue
		}
		if v := valueText(fd, m.Get(fd)); v != "()" { // an empty sub-message says nothing
			parts = append(parts, label(fd)+" "+v)
		}
	}
	return strings.Join(parts, sep)
}

// priceLabels are the short labels of price parts.
var priceLabels = map[protoreflect.Name]string{
	"input_micros": "in", "output_micros": "out", "cache_read_micros": "cache read", "cache_write_micros": "cache write",
}

// label names a field inside a one-line value: its proto name, or a price
// part's short label.
func label(fd protoreflect.FieldDescriptor) string {
	if l, ok := priceLabels[fd.Name()]; ok {
		return l
	}
	return string(fd.Name())
}

// presentText is one value of field fd (of a list or map element, for
// those), which is present: never "", so it cannot read as unset.
func presentText(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		m := v.Message()
		if leafMessage(m.Descriptor()) {
			return durationText(m)
		}
		return "(" + fieldsText(m, ", ", nil) + ")"
	case protoreflect.EnumKind:
		return enumText(fd.Enum(), v.Enum())
	case protoreflect.StringKind:
		return oneLine(fd, v.String())
	case protoreflect.BytesKind:
		return strconv.Itoa(len(v.Bytes())) + " bytes"
	case protoreflect.BoolKind:
		return strconv.FormatBool(v.Bool())
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return strconv.FormatUint(v.Uint(), 10)
	}
	return strconv.FormatInt(v.Int(), 10)
}

// durationText is a google.protobuf.Duration as a Go duration ("3s").
func durationText(m protoreflect.Message) string {
	fds := m.Descriptor().Fields()
	secs, nanos := m.Get(fds.ByName("seconds")).Int(), m.Get(fds.ByName("nanos")).Int()
	return (time.Duration(secs)*time.Second + time.Duration(nanos)).String()
}

// enumText is an enum value's name without the enum's prefix, lower case:
// WIRE_FORMAT_OPENAI is "openai" (the prefix is that of the zero value,
// WIRE_FORMAT_UNSPECIFIED). An unknown number is printed as a number.
func enumText(ed protoreflect.EnumDescriptor, n protoreflect.EnumNumber) string {
	v := ed.Values().ByNumber(n)
	if v == nil {
		return strconv.Itoa(int(n))
	}
	name := string(v.Name())
	if zero := ed.Values().ByNumber(0); zero != nil && zero != v {
		name = strings.TrimPrefix(name, strings.TrimSuffix(string(zero.Name()), "UNSPECIFIED"))
	}
	return strings.ToLower(name)
}

// oneLine is a string value on one line: `""` when empty, quoted when it
// holds control characters, and a URL field's password masked.
func oneLine(fd protoreflect.FieldDescriptor, s string) string {
	if s == "" {
		return `""`
	}
	if strings.HasSuffix(string(fd.Name()), "_url") {
		if u, err := url.Parse(s); err == nil && u.User != nil {
			if _, has := u.User.Password(); has {
				s = u.Redacted()
			}
		}
	}
	if strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return strconv.Quote(s)
	}
	return s
}
