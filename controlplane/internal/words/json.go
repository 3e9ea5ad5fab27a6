package words

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// JSON encodes m as the CLI's `--output json` does: protojson with the
// proto field names and every field present (so scripts see stable shapes),
// compact, except that every enum value is its word (Of) instead of its
// protobuf name: "failed_over", never "ATTEMPT_OUTCOME_FAILED_OVER"
// (ROUTING R-SEE-2). Fields keep protojson's order and encodings
// (64-bit integers as strings, timestamps in RFC 3339, durations as "1.5s").
func JSON(m proto.Message) ([]byte, error) {
	b, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, fmt.Errorf("re-read protojson: %w", err)
	}
	rewriteMessage(m.ProtoReflect().Descriptor(), v, toWord)
	var out bytes.Buffer
	if err := encodeValue(&out, v); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// Unmarshal reads JSON that JSON wrote (enum values as words) into m; it
// is the inverse of JSON, for tests and for programs that read the CLI's
// output back into the API's messages.
func Unmarshal(b []byte, m proto.Message) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return err
	}
	rewriteMessage(m.ProtoReflect().Descriptor(), v, fromWord)
	var out bytes.Buffer
	if err := encodeValue(&out, v); err != nil {
		return err
	}
	return protojson.Unmarshal(out.Bytes(), m)
}

// toWord returns the word of one enum value as protojson writes it (its
// name, or its number when this build has no name for it).
func toWord(ed protoreflect.EnumDescriptor, v any) any {
	switch t := v.(type) {
	case string:
		if ev := ed.Values().ByName(protoreflect.Name(t)); ev != nil {
			return word(ed, ev.Number())
		}
	case json.Number:
		if n, err := t.Int64(); err == nil {
			return word(ed, protoreflect.EnumNumber(n))
		}
	}
	return v
}

// fromWord returns the protobuf name of the value whose word is v; "" is
// the zero value.
func fromWord(ed protoreflect.EnumDescriptor, v any) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	vals := ed.Values()
	for i := 0; i < vals.Len(); i++ {
		if word(ed, vals.Get(i).Number()) == s {
			return string(vals.Get(i).Name())
		}
	}
	return v
}

// object is a JSON object with its members in order.
type object struct {
	keys []string
	vals []any
}

// decodeValue reads one JSON value: *object, []any, json.Number, string,
// bool or nil.
func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := k.(string)
				if !ok {
					return nil, errors.New("object key is not a string")
				}
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				o.keys, o.vals = append(o.keys, key), append(o.vals, v)
			}
			_, err := dec.Token() // '}'
			return o, err
		case '[':
			a := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token() // ']'
			return a, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return tok, nil
	}
}

// encodeValue writes v compact.
func encodeValue(w io.Writer, v any) error {
	switch t := v.(type) {
	case *object:
		if _, err := io.WriteString(w, "{"); err != nil {
			return err
		}
		for i, k := range t.keys {
			if i > 0 {
				io.WriteString(w, ",")
			}
			kb, _ := json.Marshal(k)
			w.Write(kb)
			io.WriteString(w, ":")
			if err := encodeValue(w, t.vals[i]); err != nil {
				return err
			}
		}
		_, err := io.WriteString(w, "}")
		return err
	case []any:
		io.WriteString(w, "[")
		for i, e := range t {
			if i > 0 {
				io.WriteString(w, ",")
			}
			if err := encodeValue(w, e); err != nil {
				return err
			}
		}
		_, err := io.WriteString(w, "]")
		return err
	default:
		b, err := json.Marshal(t)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
}

// wellKnown reports whether md is a google.protobuf type, which protojson
// writes in a special form holding no enum of ours.
func wellKnown(md protoreflect.MessageDescriptor) bool {
	return strings.HasPrefix(string(md.FullName()), "google.protobuf.")
}

// rewriteMessage replaces, in v (the protojson form of a message of type
// md), every enum value e by fn(e's type, e).
func rewriteMessage(md protoreflect.MessageDescriptor, v any, fn func(protoreflect.EnumDescriptor, any) any) {
	o, ok := v.(*object)
	if !ok || wellKnown(md) {
		return
	}
	for i, k := range o.keys {
		fd := md.Fields().ByName(protoreflect.Name(k))
		if fd == nil {
			fd = md.Fields().ByJSONName(k)
		}
		if fd == nil {
			continue
		}
		switch {
		case fd.IsMap():
			if m, ok := o.vals[i].(*object); ok {
				for j := range m.vals {
					m.vals[j] = rewriteSingle(fd.MapValue(), m.vals[j], fn)
				}
			}
		case fd.IsList():
			if a, ok := o.vals[i].([]any); ok {
				for j := range a {
					a[j] = rewriteSingle(fd, a[j], fn)
				}
			}
		default:
			o.vals[i] = rewriteSingle(fd, o.vals[i], fn)
		}
	}
}

// rewriteSingle returns one value of field fd (an element, for lists and
// maps) with enums rewritten by fn.
func rewriteSingle(fd protoreflect.FieldDescriptor, v any, fn func(protoreflect.EnumDescriptor, any) any) any {
	switch fd.Kind() {
	case protoreflect.EnumKind:
		if fd.Enum().FullName() == "google.protobuf.NullValue" {
			return v
		}
		return fn(fd.Enum(), v)
	case protoreflect.MessageKind, protoreflect.GroupKind:
		rewriteMessage(fd.Message(), v, fn)
	}
	return v
}
