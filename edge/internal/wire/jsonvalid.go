package wire

import (
	"bytes"
	"encoding/binary"
)

// maxNesting is encoding/json's limit on nested objects and arrays: a
// deeper document is not valid to it.
const maxNesting = 10000

// Valid reports whether b is one valid JSON value, exactly as json.Valid
// does (surrounding whitespace allowed, invalid UTF-8 inside strings
// accepted, at most maxNesting levels of nesting), in one pass without the
// scanner's per-byte state calls: the edge checks every caller's body with
// it (FuzzValid compares it with json.Valid).
func Valid(b []byte) bool {
	v := validator{b: b}
	i, ok := v.value(skipWS(b, 0), 0)
	return ok && skipWS(b, i) == len(b)
}

type validator struct{ b []byte }

// value checks the value starting at b[i] (whitespace before it already
// skipped) at nesting depth depth, and returns the offset after it.
func (v *validator) value(i, depth int) (int, bool) {
	b := v.b
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; c {
	case '"':
		return v.str(i)
	case '{':
		if depth >= maxNesting {
			return i, false
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			var ok bool
			if i, ok = v.str(i); !ok {
				return i, false
			}
			i = skipWS(b, i)
			if i >= len(b) || b[i] != ':' {
				return i, false
			}
			if i, ok = v.value(skipWS(b, i+1), depth+1); !ok {
				return i, false
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i = skipWS(b, i+1)
			case '}':
				return i + 1, true
			default:
				return i, false
			}
		}
	case '[':
		if depth >= maxNesting {
			return i, false
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = v.value(i, depth+1); !ok {
				return i, false
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i = skipWS(b, i+1)
			case ']':
				return i + 1, true
			default:
				return i, false
			}
		}
	case 't':
		return v.literal(i, "true")
	case 'f':
		return v.literal(i, "false")
	case 'n':
		return v.literal(i, "null")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			return v.number(i)
		}
		return i, false
	}
}

func (v *validator) literal(i int, lit string) (int, bool) {
	if len(v.b)-i >= len(lit) && string(v.b[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return i, false
}

// number checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at b[i].
func (v *validator) number(i int) (int, bool) {
	b := v.b
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// SWAR constants: a byte of each lane set.
const (
	lanes01 = 0x0101010101010101
	lanes80 = 0x8080808080808080
)

// special reports whether any byte of the 8 in x is below 0x20, a quote or
// a backslash: what ends the plain run of a JSON string.
func special(x uint64) bool {
	// A lane is below 0x20 when subtracting 0x20 borrows out of it into its
	// high bit while its own high bit was clear; a lane equals c when x^c
	// is zero there. These tests can report a lane wrongly only after a
	// lane that truly matches (a borrow runs upwards), so "any" is exact.
	low := (x - 0x20*lanes01) &^ x
	q := x ^ ('"' * lanes01)
	bs := x ^ ('\\' * lanes01)
	return (low|(q-lanes01)&^q|(bs-lanes01)&^bs)&lanes80 != 0
}

// str checks the string whose opening quote is b[i] and returns the offset
// after its closing quote: no control bytes, escapes among \" \\ \/ \b \f
// \n \r \t \uXXXX; any other byte (invalid UTF-8 included) is accepted, as
// encoding/json accepts it.
func (v *validator) str(i int) (int, bool) {
	b := v.b
	i++
	for {
		for i+8 <= len(b) && !special(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			return i, false
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return i, false
				}
				i += 6
			default:
				return i, false
			}
		case c < 0x20:
			return i, false
		default:
			i++
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// skipString returns the offset after the string whose opening quote is
// b[i]: the first quote not escaped by a backslash. It finds quotes and
// backslashes with bytes.IndexByte, so a long string costs a few
// instructions per 32 bytes, not a loop turn per byte. q is the offset of
// the next quote at or after i once known (-1 before).
func skipString(b []byte, i int) (int, error) {
	i++ // opening quote
	q := -1
	for i < len(b) {
		if q < i {
			k := bytes.IndexByte(b[i:], '"')
			if k < 0 {
				return 0, ErrNotObject
			}
			q = i + k
		}
		k := bytes.IndexByte(b[i:q], '\\')
		if k < 0 {
			return q + 1, nil
		}
		i += k + 2
	}
	return 0, ErrNotObject
}
