package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"weir.dev/edge/internal/wire"
	"weir.dev/routing"
)

// Inbound is a caller's request as the edge read it.
type Inbound = wire.Request

// bodyFields are the members of a request body the edge reads. Other members
// are never decoded and reach the provider byte for byte.
type bodyFields struct {
	Model               *string         `json:"model"`
	Stream              *bool           `json:"stream"`
	MaxTokens           *int64          `json:"max_tokens"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	MaxOutputTokens     *int64          `json:"max_output_tokens"`
	PromptCacheKey      *string         `json:"prompt_cache_key"`
	Metadata            json.RawMessage `json:"metadata"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	// The fields of shape-changing features (R-FMT-3), read in the same
	// pass; a translated call goes only to members that can say them.
	N              *int64          `json:"n"`
	Logprobs       *bool           `json:"logprobs"`
	TopLogprobs    *int64          `json:"top_logprobs"`
	ResponseFormat json.RawMessage `json:"response_format"`
	Text           json.RawMessage `json:"text"`
	Modalities     []string        `json:"modalities"`
	Audio          json.RawMessage `json:"audio"`
}

// streamOptions is the member of stream_options the edge reads.
type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// fields are bodyFields' values, a member that is absent or null read as
// its zero value: parseInbound's checks treat the two alike.
type fields struct {
	model, promptCacheKey string
	stream, logprobs      bool
	// maxTokens are max_tokens, max_completion_tokens and
	// max_output_tokens, in the order they are read.
	maxTokens                             [3]int64
	n, topLogprobs                        int64
	metadata, responseFormat, text, audio json.RawMessage
	streamOptions                         *streamOptions
	modalities                            []string
}

// values returns f's values.
func (f *bodyFields) values() fields {
	v := fields{metadata: f.Metadata, responseFormat: f.ResponseFormat, text: f.Text, audio: f.Audio,
		streamOptions: f.StreamOptions, modalities: f.Modalities}
	v.model, v.promptCacheKey = deref(f.Model), deref(f.PromptCacheKey)
	v.stream, v.logprobs = deref(f.Stream), deref(f.Logprobs)
	v.maxTokens = [3]int64{deref(f.MaxTokens), deref(f.MaxCompletionTokens), deref(f.MaxOutputTokens)}
	v.n, v.topLogprobs = deref(f.N), deref(f.TopLogprobs)
	return v
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// features are the shape-changing features a body asks for (R-FMT-3):
// n > 1, logprobs, a JSON-schema response format (chat's response_format,
// the Responses API's text.format) and audio (audio output asked for, or
// audio input given). Anthropic Messages callers have none of them.
func (f *fields) features(ep routing.Endpoint, body []byte) routing.Features {
	if ep == routing.EndpointMessages || ep == routing.EndpointEmbeddings {
		return 0
	}
	var out routing.Features
	if f.n > 1 {
		out |= routing.FeatureN
	}
	if f.logprobs || f.topLogprobs > 0 {
		out |= routing.FeatureLogprobs
	}
	if jsonSchemaFormat(f.responseFormat) || jsonSchemaFormat(textFormat(f.text)) {
		out |= routing.FeatureJSONSchema
	}
	if isSet(f.audio) || slices.Contains(f.modalities, "audio") || bytes.Contains(body, []byte(`"input_audio"`)) {
		out |= routing.FeatureAudio
	}
	return out
}

// jsonSchemaFormat reports whether a response format object asks for a
// JSON schema ({"type":"json_schema",…}).
func jsonSchemaFormat(raw json.RawMessage) bool {
	if !isSet(raw) {
		return false
	}
	var rf struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(raw, &rf) == nil && rf.Type == "json_schema"
}

// textFormat is the format member of a Responses API "text" object.
func textFormat(raw json.RawMessage) json.RawMessage {
	if !isSet(raw) {
		return nil
	}
	var t struct {
		Format json.RawMessage `json:"format"`
	}
	_ = json.Unmarshal(raw, &t)
	return t.Format
}

// isSet reports whether a raw member is present and not null.
func isSet(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// readInbound reads and checks a caller's request body. Problems are
// returned as the gateway's own 4xx errors (invalid_request), never panics.
// The request is read into *in (held by the call), which is returned.
func readInbound(r *http.Request, rc *http.ResponseController, ep routing.Endpoint, br *bodyReader, in *Inbound) (*Inbound, *routing.Error) {
	body, e := br.read(r, rc)
	if e != nil {
		return nil, e
	}
	return parseInbound(in, body, ep, r.Header)
}

// parseInbound checks a caller's request body and reads the fields the
// edge routes and prices by, into *in.
func parseInbound(in *Inbound, body []byte, ep routing.Endpoint, h http.Header) (*Inbound, *routing.Error) {
	*in = Inbound{Endpoint: ep, Body: body, Header: h}
	var f fields
	if !scanFields(body, &f) {
		g, e := decodeFields(body)
		if e != nil {
			return nil, e
		}
		f = g.values()
	}
	if f.streamOptions != nil {
		if so, _ := wire.TopValue(body, "stream_options"); len(so) > 0 && so[0] == '{' {
			if e := oneReadingOf(so, "include_usage"); e != nil {
				return nil, e
			}
		}
	}
	var problems []string
	if strings.TrimSpace(f.model) == "" {
		problems = append(problems, "model is required")
	} else if len(f.model) > 256 {
		problems = append(problems, "model is longer than 256 characters")
	} else {
		in.Model = f.model
	}
	in.Stream = f.stream
	if ep == routing.EndpointEmbeddings && in.Stream {
		problems = append(problems, "embeddings cannot be streamed")
	}
	for _, p := range f.maxTokens {
		if p < 0 {
			problems = append(problems, "max tokens must not be negative")
		} else if in.MaxOutput == 0 {
			in.MaxOutput = p
		}
	}
	in.PromptCacheKey = f.promptCacheKey
	if ep == routing.EndpointMessages && len(f.metadata) > 0 {
		var md struct {
			UserID string `json:"user_id"`
		}
		if json.Unmarshal(f.metadata, &md) == nil {
			in.UserID = md.UserID
		}
	}
	if f.streamOptions != nil {
		in.IncludeUsage = f.streamOptions.IncludeUsage
	}
	in.Features = f.features(ep, body)
	if len(problems) > 0 {
		return nil, &routing.Error{Status: 400, Code: routing.CodeInvalidRequest, Message: strings.Join(problems, "; ")}
	}
	return in, nil
}

// decodeFields reads body's fields with encoding/json and refuses a body
// that providers could read otherwise than the edge (oneReading): the
// reference reading, which scanFields takes a short cut to.
func decodeFields(body []byte) (*bodyFields, *routing.Error) {
	f := new(bodyFields)
	if err := json.Unmarshal(body, f); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil, &routing.Error{Status: 400, Code: routing.CodeInvalidRequest, Message: "request body field " + typeErr.Field + " has the wrong type"}
		}
		return nil, &routing.Error{Status: 400, Code: routing.CodeInvalidRequest, Message: "request body is not a valid JSON object"}
	}
	if e := oneReading(body); e != nil {
		return nil, e
	}
	return f, nil
}

// bodyFieldNames are bodyFields' JSON names, in the order of fieldIndex.
var bodyFieldNames = [...]string{"model", "stream", "max_tokens", "max_completion_tokens", "max_output_tokens",
	"prompt_cache_key", "metadata", "stream_options", "n", "logprobs", "top_logprobs", "response_format", "text",
	"modalities", "audio"}

// scanFields is decodeFields' fast path for the usual body: a valid JSON
// object whose top-level keys are plain ASCII without escapes, none of
// bodyFields' names appearing twice or spelled in another case, and each
// of their values of the type bodyFields reads (or null). It fills f as
// json.Unmarshal would (as values), and returns true;
// a body it cannot read so (or that decodeFields would refuse) makes it
// return false, and decodeFields reads it instead, errors included. So
// both paths read every body the same; this one allocates only the
// strings it returns and skips encoding/json's reflection.
//
// Such a body passes oneReading: oneReading's names are bodyFields' and
// each is spelled plainly, once.
func scanFields(body []byte, f *fields) bool {
	if !wire.Valid(body) {
		return false
	}
	var seen uint32
	ok := true
	err := wire.ScanTop(body, func(raw, v []byte) error {
		i := fieldIndex(raw)
		if i == -2 || (i >= 0 && seen&(1<<i) != 0) {
			ok = false
			return errStop
		}
		if i < 0 {
			return nil
		}
		seen |= 1 << i
		if string(v) == "null" {
			switch bodyFieldNames[i] {
			case "metadata", "response_format", "text", "audio":
				// A json.RawMessage holds the null (isSet reads it as
				// unset): assigned below like any value.
			default:
				return nil // json.Unmarshal leaves the member as it was
			}
		}
		switch bodyFieldNames[i] {
		case "model":
			f.model, ok = scanString(v)
		case "prompt_cache_key":
			f.promptCacheKey, ok = scanString(v)
		case "stream":
			f.stream, ok = scanBool(v)
		case "logprobs":
			f.logprobs, ok = scanBool(v)
		case "max_tokens":
			f.maxTokens[0], ok = scanInt(v)
		case "max_completion_tokens":
			f.maxTokens[1], ok = scanInt(v)
		case "max_output_tokens":
			f.maxTokens[2], ok = scanInt(v)
		case "n":
			f.n, ok = scanInt(v)
		case "top_logprobs":
			f.topLogprobs, ok = scanInt(v)
		case "metadata":
			f.metadata = v
		case "response_format":
			f.responseFormat = v
		case "text":
			f.text = v
		case "audio":
			f.audio = v
		case "stream_options":
			// Rare: encoding/json reads these members, as it would in
			// the whole body.
			f.streamOptions, ok = decodeJSON[*streamOptions](v)
		case "modalities":
			f.modalities, ok = decodeJSON[[]string](v)
		}
		if !ok {
			return errStop
		}
		return nil
	})
	return ok && err == nil
}

// decodeJSON reads v with encoding/json (kept apart so that what it reads
// into is allocated only when it runs).
func decodeJSON[T any](v []byte) (T, bool) {
	var out T
	err := json.Unmarshal(v, &out)
	return out, err == nil
}

// errStop ends a wire.ScanTop early.
var errStop = errors.New("stop")

// fieldIndex is the index in bodyFieldNames of a raw top-level key: -1
// for a key that is none of them in any case, -2 for a key scanFields
// leaves to encoding/json (escapes, non-ASCII, or one of the names in
// another case).
func fieldIndex(raw []byte) int {
	if bytes.IndexByte(raw, '\\') >= 0 || !isASCII(raw) {
		return -2
	}
	for i, n := range bodyFieldNames {
		if string(raw) == n {
			return i
		}
	}
	for _, n := range bodyFieldNames {
		if bytes.EqualFold(raw, []byte(n)) {
			return -2
		}
	}
	return -1
}

// scanString reads a JSON string (not null) as json.Unmarshal reads a
// *string member: false for another type. A string with escapes or
// non-ASCII bytes is decoded by encoding/json (which resolves escapes and
// replaces invalid UTF-8).
func scanString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	inner := v[1 : len(v)-1]
	if bytes.IndexByte(inner, '\\') < 0 && isASCII(inner) {
		return string(inner), true
	}
	return decodeJSON[string](v)
}

// scanBool reads a JSON true or false as json.Unmarshal reads a *bool
// member: false for another type.
func scanBool(v []byte) (bool, bool) {
	switch string(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// scanInt reads a JSON number as json.Unmarshal reads an *int64 member:
// false for another type, a fraction, an exponent or an overflow (which
// encoding/json refuses as the wrong type).
func scanInt(v []byte) (int64, bool) {
	if len(v) == 0 || v[0] != '-' && (v[0] < '0' || v[0] > '9') {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}

// apiKey returns the key a caller presented: "Authorization: Bearer <key>"
// or "x-api-key: <key>".
func apiKey(h http.Header) string {
	if a := h.Get("Authorization"); a != "" {
		if len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
			return strings.TrimSpace(a[7:])
		}
		return ""
	}
	return strings.TrimSpace(h.Get("X-Api-Key"))
}

// estimateInputTokens is the edge's input estimate for headroom and
// reservations (R-HEAD-3, R-COST-1): about four bytes of body a token. It
// overestimates for JSON overhead, which errs on the side of reserving more.
func estimateInputTokens(body []byte) int64 { return int64(len(body)+3) / 4 }

// oneReading refuses a body (already known to be valid JSON) that providers
// could read otherwise than the edge (R-SEC-5): a routed field given twice,
// or under another spelling of its name — another case ("MODEL", which
// encoding/json, and so a Go provider, reads as "model"; Unicode folding
// included, e.g. the Kelvin sign for k), or JSON escapes ("mod\u0065l",
// which every JSON reader decodes to "model"). Names are compared as written,
// so the one spelling accepted is the plain one, once; then every reader —
// case-sensitive, case-insensitive, first-wins or last-wins — reads the
// same values the edge checked and priced.
func oneReading(body []byte) *routing.Error {
	return oneReadingOf(body, "model", "stream", "max_tokens", "max_completion_tokens", "max_output_tokens", "stream_options")
}

// oneReadingOf is oneReading for the given names of the object b.
func oneReadingOf(b []byte, names ...string) *routing.Error {
	var seen uint32
	err := wire.ScanTop(b, func(raw, _ []byte) error {
		for i, n := range names {
			if string(raw) == n {
				if seen&(1<<i) != 0 {
					return &routing.Error{Status: 400, Code: routing.CodeInvalidRequest, Message: "request body field " + n + " appears more than once"}
				}
				seen |= 1 << i
				return nil
			}
		}
		if bytes.IndexByte(raw, '\\') < 0 && isASCII(raw) {
			for _, n := range names {
				if bytes.EqualFold(raw, []byte(n)) {
					return spelledOtherwise(n)
				}
			}
			return nil
		}
		var key string
		if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &key) != nil {
			return nil
		}
		for _, n := range names {
			if strings.EqualFold(key, n) {
				return spelledOtherwise(n)
			}
		}
		return nil
	})
	if e, ok := err.(*routing.Error); ok {
		return e
	}
	if err != nil {
		return &routing.Error{Status: 400, Code: routing.CodeInvalidRequest, Message: "request body is not a valid JSON object"}
	}
	return nil
}

func spelledOtherwise(n string) *routing.Error {
	return &routing.Error{Status: 400, Code: routing.CodeInvalidRequest, Message: "request body field " + n + ` is spelled another way (another case, or JSON escapes); only "` + n + `" is accepted`}
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}
