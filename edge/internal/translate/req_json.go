package translate

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
)

// This file holds the JSON reading helpers of the request parsers and the
// writing helper of the renderers. Every reading helper names the JSON
// path of what it reads, so that a failure is a *BadRequest naming the
// field.

// reqAbsent reports whether a field was not given (missing or null).
func reqAbsent(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// reqJoin appends a member name to a path.
func reqJoin(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// reqIndex appends an array index to a path.
func reqIndex(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// reqBody decodes a whole request body into v (a struct whose polymorphic
// fields are json.RawMessage).
func reqBody(body []byte, v any) error {
	if !json.Valid(body) {
		return badf("", "body is not valid JSON")
	}
	t := bytes.TrimSpace(body)
	if len(t) == 0 || t[0] != '{' {
		return badf("", "body must be a JSON object")
	}
	return reqObject(json.RawMessage(t), "", v)
}

// reqObject decodes the JSON object raw, found at path, into the struct v.
// A type mismatch of one of v's typed fields names that field.
func reqObject(raw json.RawMessage, path string, v any) error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return badf(path, "must be an object")
	}
	if err := json.Unmarshal(t, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			f := path
			if te.Field != "" {
				f = reqJoin(path, te.Field)
			}
			return badf(f, "must be %s", reqKind(te.Type.Kind().String()))
		}
		return badf(path, "cannot be read: %v", err)
	}
	return nil
}

// reqKind names a Go kind as a JSON type for an error message.
func reqKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "float64", "float32":
		return "a number"
	case "int", "int64", "int32", "uint8", "uint64":
		return "an integer"
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	}
	return "of another type"
}

// reqArray decodes the JSON array raw, found at path, into its elements.
func reqArray(raw json.RawMessage, path string) ([]json.RawMessage, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '[' {
		return nil, badf(path, "must be an array")
	}
	var out []json.RawMessage
	if err := json.Unmarshal(t, &out); err != nil {
		return nil, badf(path, "must be an array")
	}
	return out, nil
}

// reqString decodes raw, found at path, as a string. ok is false when raw
// is not a string (and is not an error: the caller decides).
func reqString(raw json.RawMessage) (s string, ok bool) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '"' {
		return "", false
	}
	if err := json.Unmarshal(t, &s); err != nil {
		return "", false
	}
	return s, true
}

// reqIsArray reports whether raw is a JSON array.
func reqIsArray(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '['
}

// reqIsObject reports whether raw is a JSON object.
func reqIsObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}

// reqPartsOf reads a content field that is a string (one text part) or an
// array, each item of which each reads and appends to parts (none for an
// item that is dropped). An absent field is an error when required, else
// no parts; any other JSON value is an error naming what the array holds.
func reqPartsOf(raw json.RawMessage, path string, required bool, what string,
	each func(item json.RawMessage, path string, parts []Part) ([]Part, error)) ([]Part, error) {
	if reqAbsent(raw) {
		if required {
			return nil, badf(path, "is required")
		}
		return nil, nil
	}
	if s, ok := reqString(raw); ok {
		return []Part{{Kind: PartText, Text: s}}, nil
	}
	if !reqIsArray(raw) {
		return nil, badf(path, "must be a string or an array of %s", what)
	}
	items, err := reqArray(raw, path)
	if err != nil {
		return nil, err
	}
	parts := make([]Part, 0, len(items))
	for i, it := range items {
		if parts, err = each(it, reqIndex(path, i), parts); err != nil {
			return nil, err
		}
	}
	return parts, nil
}

// reqStops reads a stop field: a string or an array of strings.
func reqStops(raw json.RawMessage, path string) ([]string, error) {
	if reqAbsent(raw) {
		return nil, nil
	}
	if s, ok := reqString(raw); ok {
		return []string{s}, nil
	}
	items, err := reqArray(raw, path)
	if err != nil {
		return nil, badf(path, "must be a string or an array of strings")
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		s, ok := reqString(it)
		if !ok {
			return nil, badf(reqIndex(path, i), "must be a string")
		}
		out = append(out, s)
	}
	return out, nil
}

// reqArguments reads a tool call's arguments given as a JSON string (the
// OpenAI shapes): "" is no arguments ("{}"); otherwise the string must hold
// a JSON object, kept compacted.
func reqArguments(raw json.RawMessage, path string) (json.RawMessage, error) {
	if reqAbsent(raw) {
		return json.RawMessage("{}"), nil
	}
	s, ok := reqString(raw)
	if !ok {
		return nil, badf(path, "must be a string holding a JSON object")
	}
	if strings.TrimSpace(s) == "" {
		return json.RawMessage("{}"), nil
	}
	return reqJSONObject(json.RawMessage(s), path)
}

// reqJSONObject checks that raw, found at path, is a JSON object and
// returns it compacted.
func reqJSONObject(raw json.RawMessage, path string) (json.RawMessage, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		return nil, badf(path, "must be a JSON object")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, t); err != nil {
		return nil, badf(path, "must be a JSON object")
	}
	return json.RawMessage(b.Bytes()), nil
}

// reqSchema reads a tool's parameter schema: absent is nil, otherwise a
// JSON object, kept compacted.
func reqSchema(raw json.RawMessage, path string) (json.RawMessage, error) {
	if reqAbsent(raw) {
		return nil, nil
	}
	return reqJSONObject(raw, path)
}

// reqMaxOutput checks an output cap: 0 is none, negative is refused.
func reqMaxOutput(v *int64, path string) (int64, error) {
	if v == nil {
		return 0, nil
	}
	if *v < 0 {
		return 0, badf(path, "must not be negative")
	}
	return *v, nil
}

// reqImageURL reads an image given by URL in the OpenAI shapes: a data:
// URL becomes an inline image (it must be base64), anything else is kept
// as a URL.
func reqImageURL(u, path string) (Part, error) {
	if u == "" {
		return Part{}, badf(path, "must not be empty")
	}
	if !strings.HasPrefix(u, "data:") {
		return Part{Kind: PartImage, URL: u}, nil
	}
	head, data, ok := strings.Cut(u[len("data:"):], ",")
	mt, enc, _ := strings.Cut(head, ";")
	if !ok || mt == "" || enc != "base64" {
		return Part{}, badf(path, "a data URL must be data:<media type>;base64,<data>")
	}
	if !reqBase64(data) {
		return Part{}, badf(path, "a data URL must hold base64 data")
	}
	return Part{Kind: PartImage, MediaType: mt, Data: data}, nil
}

// reqBase64 reports whether s is standard base64, checked in a stream so
// that a large image is not decoded into memory.
func reqBase64(s string) bool {
	if s == "" {
		return false
	}
	_, err := io.Copy(io.Discard, base64.NewDecoder(base64.StdEncoding, strings.NewReader(s)))
	return err == nil
}

// reqCalls tracks the tool calls a request has made so far, so that each
// tool result can be matched with an earlier call by id.
type reqCalls map[string]string

// add records a call.
func (c reqCalls) add(id, name string) { c[id] = name }

// check refuses a result whose id matches no earlier call.
func (c reqCalls) check(id, path string) error {
	if id == "" {
		return badf(path, "is required")
	}
	if _, ok := c[id]; !ok {
		return badf(path, "matches no earlier tool call")
	}
	return nil
}

// reqAppendTurn appends parts as a turn of role, merged into the last turn
// when that has the same role.
func reqAppendTurn(msgs []Message, role Role, parts ...Part) []Message {
	if n := len(msgs); n > 0 && msgs[n-1].Role == role {
		msgs[n-1].Parts = append(msgs[n-1].Parts, parts...)
		return msgs
	}
	return append(msgs, Message{Role: role, Parts: parts})
}

// reqRenderJSON writes v as compact JSON without HTML escaping (so "<" in a
// prompt stays "<"), the one encoding all renderers use.
func reqRenderJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// reqRenderArgs returns a tool call's arguments as a JSON object, "{}" when
// none; anything else is an error (a Request from a parser never has it).
func reqRenderArgs(a json.RawMessage) (json.RawMessage, error) {
	if reqAbsent(a) {
		return json.RawMessage("{}"), nil
	}
	t := bytes.TrimSpace(a)
	if len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		return nil, badf("", "tool call arguments must be a JSON object")
	}
	return json.RawMessage(t), nil
}

// reqResultText joins the text parts of a tool result's content.
func reqResultText(content []Part) string {
	var texts []string
	for _, p := range content {
		if p.Kind == PartText {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// reqJoinText joins the text parts among parts with sep.
func reqJoinText(parts []Part, sep string) string {
	var texts []string
	for _, p := range parts {
		if p.Kind == PartText {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, sep)
}
