// Package wire holds what the edge's adapters share about the wire: editing
// the top level of a JSON request body without re-encoding the rest, reading
// Server-Sent Events, and pulling usage out of answers.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
)

// ErrNotObject is returned when a body is not a JSON object.
var ErrNotObject = errors.New("request body is not a JSON object")

// member is one top-level member of an object: its key as encoding/json
// decodes it, and the byte offsets of the key's opening quote, the value's
// first byte and the byte after the value.
type member struct {
	key                        string
	keyStart, valStart, valEnd int
}

// topLevel scans a JSON object and returns its top-level members in order
// (duplicates included) and the offset of its closing brace. It validates
// structure only as far as it must to find them (strings, nesting); the edge
// has already decoded the body once with encoding/json, so a body reaching
// here is valid JSON. On any other input it returns ErrNotObject or members
// of no particular meaning, and never panics.
func topLevel(b []byte) ([]member, int, error) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, 0, ErrNotObject
	}
	var out []member
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
		key := jsonKey(b[ks:ke])
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
		out = append(out, member{key: key, keyStart: ks, valStart: vs, valEnd: ve})
		i = ve
	}
}

// jsonKey decodes a quoted JSON string (quotes included) as encoding/json
// does: escapes resolved, invalid UTF-8 replaced by U+FFFD. Plain ASCII keys,
// the usual case, take no decoder.
func jsonKey(q []byte) string {
	inner := q[1 : len(q)-1]
	plain := true
	for _, c := range inner {
		if c == '\\' || c >= 0x80 {
			plain = false
			break
		}
	}
	if !plain {
		var s string
		if json.Unmarshal(q, &s) == nil {
			return s
		}
	}
	return string(inner)
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
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
// its value (or adds the member when absent) with Raw, which must be one
// valid JSON value; Delete removes it.
type Edit struct {
	Key    string
	Raw    []byte
	Delete bool
}

// ErrBadValue is returned when a setting Edit's Raw is not valid JSON.
var ErrBadValue = errors.New("edit value is not valid JSON")

// EditTop applies edits to the top level of the JSON object b and returns a
// new body; everything else is kept byte for byte (other members, their
// order, the whitespace between the members kept), so options the caller
// chose (e.g. embeddings' encoding_format) reach the provider unchanged.
//
// Contract, for b any valid JSON object (as encoding/json accepts it):
//   - the result is valid JSON and decodes (with encoding/json) to b's
//     decoding with the edits applied in order: of several edits of one key
//     the last wins; a Delete removes the key, a Set gives it Raw's value;
//     keys are compared after decoding, so "mo\u0064el" is "model";
//   - an edited key appears at most once in the result: a Set replaces the
//     value of the key's last occurrence (the one encoding/json decodes) and
//     drops earlier duplicates, a Delete drops every occurrence; members
//     not edited are kept as they are, duplicates included;
//   - a Set of an absent key appends the member at the end of the object.
//
// It returns ErrNotObject when b is not an object and ErrBadValue when a Set
// carries no valid JSON value. On input that is not valid JSON it may return
// an error or bytes of no particular meaning, but it never panics.
func EditTop(b []byte, edits ...Edit) ([]byte, error) {
	if err := checkEdits(edits); err != nil {
		return nil, err
	}
	ms, end, err := topLevel(b)
	if err != nil {
		return nil, err
	}
	// final and last are made here, not in plan, so that, being small and
	// not escaping, they can live on EditTop's stack.
	p := editPlan{edits: edits, final: make([]int, len(edits)), last: make([]int, len(edits))}
	p.plan(ms)
	out := make([]byte, 0, editedCap(b, edits))
	if len(ms) == 0 {
		out = append(out, b[:end]...)
	} else {
		out = append(out, b[:ms[0].keyStart]...)
	}
	out, wrote := p.appendMembers(out, b, ms)
	out = p.appendAbsent(out, wrote)
	if len(ms) == 0 {
		out = append(out, b[end:]...)
	} else {
		out = append(out, b[ms[len(ms)-1].valEnd:]...)
	}
	return out, nil
}

// checkEdits returns ErrBadValue when a setting edit's Raw is not one valid
// JSON value, and nil otherwise; deleting edits are not looked at.
func checkEdits(edits []Edit) error {
	for _, e := range edits {
		if !e.Delete && !json.Valid(e.Raw) {
			return ErrBadValue
		}
	}
	return nil
}

// editedCap returns the capacity EditTop allocates for its result: b's
// length plus, per edit, room for its quoted key, its value and the
// punctuation around them, so that the result is usually written without
// growing (a key needing escapes may take more).
func editedCap(b []byte, edits []Edit) int {
	grow := len(b)
	for _, e := range edits {
		grow += len(e.Key) + len(e.Raw) + 8
	}
	return grow
}

// editPlan is what EditTop decides before it writes: which edit decides
// each edited key and which member of the body that key last occurs as.
type editPlan struct {
	edits []Edit
	// final[i] is the index in edits of the edit that decides edits[i].Key
	// (the last of that key); last[i] the index in ms of that key's last
	// occurrence, or -1; last is meaningful only at deciding indexes.
	final, last []int
}

// plan fills in p.final and p.last (both len(p.edits) long) for applying
// p.edits to an object whose top-level members are ms: of several edits of
// one key the last decides, and a key's last occurrence in ms is the one a
// Set replaces.
func (p *editPlan) plan(ms []member) {
	edits := p.edits
	for i, e := range edits {
		p.final[i], p.last[i] = i, -1
		for j := len(edits) - 1; j > i; j-- {
			if edits[j].Key == e.Key {
				p.final[i] = j
				break
			}
		}
	}
	for k, m := range ms {
		if d := p.decide(m.key); d >= 0 {
			p.last[d] = k
		}
	}
}

// decide returns the index in p.edits of the edit that decides key (the
// last edit of that key), or -1 when no edit names key.
func (p *editPlan) decide(key string) int {
	for i, e := range p.edits {
		if e.Key == key {
			return p.final[i]
		}
	}
	return -1
}

// appendMembers appends to out the members ms of b as the plan edits them,
// in order: a member no edit names is copied verbatim; a Set key's last
// occurrence is copied with its value replaced; deleted members and earlier
// occurrences of a Set key are dropped. Between two members written it
// copies the separator (whitespace, one comma, whitespace) that followed
// the first of them in b. It returns out and whether it wrote any member.
func (p *editPlan) appendMembers(out, b []byte, ms []member) ([]byte, bool) {
	prev := -1 // the last member written, as an index in ms
	for k, m := range ms {
		d := p.decide(m.key)
		if d >= 0 && (p.edits[d].Delete || p.last[d] != k) {
			continue
		}
		if prev >= 0 {
			out = append(out, b[ms[prev].valEnd:ms[prev+1].keyStart]...)
		}
		if d >= 0 {
			out = append(out, b[m.keyStart:m.valStart]...)
			out = append(out, p.edits[d].Raw...)
		} else {
			out = append(out, b[m.keyStart:m.valEnd]...)
		}
		prev = k
	}
	return out, prev >= 0
}

// appendAbsent appends to out, in the order of their deciding edits, a
// member for each key that a Set decides and the body lacks: the key
// JSON-quoted, a colon and the Set's value, each preceded by a comma when a
// member was already written (wrote, then any appended here). It returns out.
func (p *editPlan) appendAbsent(out []byte, wrote bool) []byte {
	for i, e := range p.edits {
		if p.final[i] != i || e.Delete || p.last[i] >= 0 {
			continue
		}
		if wrote {
			out = append(out, ',')
		}
		q, _ := json.Marshal(e.Key)
		out = append(out, q...)
		out = append(out, ':')
		out = append(out, e.Raw...)
		wrote = true
	}
	return out
}

// TopValue returns the raw JSON value of a top-level member of an object
// (of its last occurrence, the one encoding/json decodes), or nil when the
// member is absent.
func TopValue(b []byte, key string) ([]byte, error) {
	ms, _, err := topLevel(b)
	if err != nil {
		return nil, err
	}
	for k := len(ms) - 1; k >= 0; k-- {
		if ms[k].key == key {
			return b[ms[k].valStart:ms[k].valEnd], nil
		}
	}
	return nil, nil
}

// ScanTop calls fn with each top-level member of the JSON object b, in
// order and duplicates included: the member's key as written between its
// quotes (escapes not resolved) and its raw value. It returns fn's first
// error. b must be valid JSON; on other input ScanTop returns ErrNotObject
// or calls fn with members of no particular meaning, and never panics.
func ScanTop(b []byte, fn func(rawKey, value []byte) error) error {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return ErrNotObject
	}
	i++
	for {
		i = skipWS(b, i)
		if i >= len(b) {
			return ErrNotObject
		}
		switch b[i] {
		case '}':
			return nil
		case ',':
			i++
			continue
		case '"':
		default:
			return ErrNotObject
		}
		ks := i
		ke, err := skipString(b, i)
		if err != nil {
			return err
		}
		i = skipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return ErrNotObject
		}
		vs := skipWS(b, i+1)
		ve, err := skipValue(b, vs)
		if err != nil {
			return err
		}
		if err := fn(b[ks+1:ke-1], b[vs:ve]); err != nil {
			return err
		}
		i = ve
	}
}

// SetAbsent is EditTop(b, Edit{Key: key, Raw: raw}) for a body that has
// no member key, without EditTop's decoding of every key: it returns the
// same bytes and true. It returns false, leaving the edit to EditTop, when
// b is not an object or may hold key: a top-level key spelled key, or one
// with escapes (which might decode to it). key must be plain (ASCII
// letters, digits, underscores: JSON-quoted as is) and raw one valid JSON
// value.
func SetAbsent(b []byte, key string, raw []byte) ([]byte, bool) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	lastEnd := -1 // the offset after the last member's value
	for i++; ; {
		i = skipWS(b, i)
		if i >= len(b) {
			return nil, false
		}
		if b[i] == '}' {
			break
		}
		if b[i] == ',' {
			i++
			continue
		}
		if b[i] != '"' {
			return nil, false
		}
		ke, err := skipString(b, i)
		if err != nil {
			return nil, false
		}
		if k := b[i+1 : ke-1]; string(k) == key || bytes.IndexByte(k, '\\') >= 0 {
			return nil, false
		}
		i = skipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		ve, err := skipValue(b, skipWS(b, i+1))
		if err != nil {
			return nil, false
		}
		lastEnd, i = ve, ve
	}
	at := i // the closing brace: an empty object gets the member there
	if lastEnd >= 0 {
		at = lastEnd
	}
	out := make([]byte, 0, len(b)+len(key)+len(raw)+4)
	out = append(out, b[:at]...)
	if lastEnd >= 0 {
		out = append(out, ',')
	}
	out = append(out, '"')
	out = append(out, key...)
	out = append(out, '"', ':')
	out = append(out, raw...)
	return append(out, b[at:]...), true
}
