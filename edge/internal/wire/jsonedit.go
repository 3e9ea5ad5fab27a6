// Package wire holds what the edge's adapters share about the wire: editing
// the top level of a JSON request body without re-encoding the rest, reading
// Server-Sent Events, and pulling usage out of answers.
package wire

import (
	"errors"
	"strconv"
)

// ErrNotObject is returned when a body is not a JSON object.
var ErrNotObject = errors.New("request body is not a JSON object")

// span is the byte range of one top-level member: key start to value end.
type span struct {
	keyStart, valStart, valEnd int
}

// topLevel scans a JSON object and returns the spans of its top-level keys,
// in order. It validates structure only as far as it must to find them
// (strings, nesting); the edge has already decoded the body once with
// encoding/json, so a body reaching here is valid JSON.
func topLevel(b []byte) (map[string]span, int, error) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, 0, ErrNotObject
	}
	out := map[string]span{}
	i++
	for {
		i = skipWS(b, i)
		if i >= len(b) {
			return nil, 0, ErrNotObject
		}
		if b[i] == '}' {
			return out, i, nil
		}
		if b[i] == ',' {
			i++
			continue
		}
		if b[i] != '"' {
			return nil, 0, ErrNotObject
		}
		ks := i
		ke, err := skipString(b, i)
		if err != nil {
			return nil, 0, err
		}
		key, err := strconv.Unquote(string(b[ks:ke]))
		if err != nil {
			key = string(b[ks+1 : ke-1])
		}
		i = skipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return nil, 0, ErrNotObject
		}
		i = skipWS(b, i+1)
		vs := i
		ve, err := skipValue(b, i)
		if err != nil {
			return nil, 0, err
		}
		out[key] = span{keyStart: ks, valStart: vs, valEnd: ve}
		i = ve
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func skipString(b []byte, i int) (int, error) {
	i++ // opening quote
	for i < len(b) {
		switch b[i] {
		case '\\':
			i += 2
		case '"':
			return i + 1, nil
		default:
			i++
		}
	}
	return 0, ErrNotObject
}

func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, ErrNotObject
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				e, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = e
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, ErrNotObject
	default:
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\n' && b[i] != '\r' && b[i] != '\t' {
			i++
		}
		return i, nil
	}
}

// Edit is one change to a top-level member of a JSON object: Set replaces
// its value (or adds the member when absent) with raw JSON; Delete removes it.
type Edit struct {
	Key    string
	Raw    []byte
	Delete bool
}

// EditTop applies edits to the top level of a JSON object and returns a new
// body; everything else is kept byte for byte, so options the caller chose
// (e.g. embeddings' encoding_format) reach the provider unchanged.
func EditTop(b []byte, edits ...Edit) ([]byte, error) {
	spans, end, err := topLevel(b)
	if err != nil {
		return nil, err
	}
	type cut struct {
		from, to int
		with     []byte
	}
	var cuts []cut
	var adds []byte
	for _, e := range edits {
		s, ok := spans[e.Key]
		switch {
		case ok && e.Delete:
			from, to := s.keyStart, s.valEnd
			// remove one adjacent comma
			j := skipWS(b, to)
			if j < len(b) && b[j] == ',' {
				to = j + 1
			} else {
				k := from - 1
				for k >= 0 && (b[k] == ' ' || b[k] == '\n' || b[k] == '\r' || b[k] == '\t') {
					k--
				}
				if k >= 0 && b[k] == ',' {
					from = k
				}
			}
			cuts = append(cuts, cut{from, to, nil})
		case ok:
			cuts = append(cuts, cut{s.valStart, s.valEnd, e.Raw})
		case !e.Delete:
			adds = append(adds, ',')
			adds = strconv.AppendQuote(adds, e.Key)
			adds = append(adds, ':')
			adds = append(adds, e.Raw...)
		}
	}
	// apply cuts from the end so offsets stay valid
	for i := 1; i < len(cuts); i++ {
		for j := i; j > 0 && cuts[j].from > cuts[j-1].from; j-- {
			cuts[j], cuts[j-1] = cuts[j-1], cuts[j]
		}
	}
	out := make([]byte, 0, len(b)+len(adds)+16)
	out = append(out, b...)
	for _, c := range cuts {
		if c.from >= end {
			continue
		}
		tail := append([]byte(nil), out[c.to:]...)
		out = append(append(out[:c.from], c.with...), tail...)
		if c.to <= end {
			end += len(c.with) - (c.to - c.from)
		}
	}
	if len(adds) > 0 {
		// empty object: drop the leading comma
		inner := skipWS(out, skipWS(out, 0)+1)
		if inner == end {
			adds = adds[1:]
		}
		tail := append([]byte(nil), out[end:]...)
		out = append(append(out[:end], adds...), tail...)
	}
	return out, nil
}

// TopValue returns the raw JSON value of a top-level member of an object,
// or nil when the member is absent.
func TopValue(b []byte, key string) ([]byte, error) {
	spans, _, err := topLevel(b)
	if err != nil {
		return nil, err
	}
	if sp, ok := spans[key]; ok {
		return b[sp.valStart:sp.valEnd], nil
	}
	return nil, nil
}
