package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
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
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
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

// features are the shape-changing features a body asks for (R-FMT-3):
// n > 1, logprobs, a JSON-schema response format (chat's response_format,
// the Responses API's text.format) and audio (audio output asked for, or
// audio input given). Anthropic Messages callers have none of them.
func (f *bodyFields) features(ep routing.Endpoint, body []byte) routing.Features {
	if ep == routing.EndpointMessages || ep == routing.EndpointEmbeddings {
		return 0
	}
	var out routing.Features
	if f.N != nil && *f.N > 1 {
		out |= routing.FeatureN
	}
	if f.Logprobs != nil && *f.Logprobs || f.TopLogprobs != nil && *f.TopLogprobs > 0 {
		out |= routing.FeatureLogprobs
	}
	if jsonSchemaFormat(f.ResponseFormat) || jsonSchemaFormat(textFormat(f.Text)) {
		out |= routing.FeatureJSONSchema
	}
	if isSet(f.Audio) || slices.Contains(f.Modalities, "audio") || bytes.Contains(body, []byte(`"input_audio"`)) {
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
func readInbound(r *http.Request, rc *http.ResponseController, ep routing.Endpoint, br *bodyReader) (*Inbound, *routing.Error) {
	body, e := br.read(r, rc)
	if e != nil {
		return nil, e
	}
	return parseInbound(body, ep, r.Header)
}

// parseInbound checks a caller's request body and reads the fields the
// edge routes and prices by.
func parseInbound(body []byte, ep routing.Endpoint, h http.Header) (*Inbound, *routing.Error) {
	in := &Inbound{Endpoint: ep, Body: body, Header: h}
	var f bodyFields
	if err := json.Unmarshal(body, &f); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil, &routing.Error{Status: 400, Code: routing.CodeInvalidRequest, Message: "request body field " + typeErr.Field + " has the wrong type"}
		}
		return nil, &routing.Error{Status: 400, Code: routing.CodeInvalidRequest, Message: "request body is not a valid JSON object"}
	}
	if e := oneReading(body); e != nil {
		return nil, e
	}
	if f.StreamOptions != nil {
		if so, _ := wire.TopValue(body, "stream_options"); len(so) > 0 && so[0] == '{' {
			if e := oneReadingOf(so, "include_usage"); e != nil {
				return nil, e
			}
		}
	}
	var problems []string
	if f.Model == nil || strings.TrimSpace(*f.Model) == "" {
		problems = append(problems, "model is required")
	} else if len(*f.Model) > 256 {
		problems = append(problems, "model is longer than 256 characters")
	} else {
		in.Model = *f.Model
	}
	if f.Stream != nil {
		in.Stream = *f.Stream
	}
	if ep == routing.EndpointEmbeddings && in.Stream {
		problems = append(problems, "embeddings cannot be streamed")
	}
	for _, p := range []*int64{f.MaxTokens, f.MaxCompletionTokens, f.MaxOutputTokens} {
		if p != nil {
			if *p < 0 {
				problems = append(problems, "max tokens must not be negative")
			} else if in.MaxOutput == 0 {
				in.MaxOutput = *p
			}
		}
	}
	if f.PromptCacheKey != nil {
		in.PromptCacheKey = *f.PromptCacheKey
	}
	if ep == routing.EndpointMessages && len(f.Metadata) > 0 {
		var md struct {
			UserID string `json:"user_id"`
		}
		if json.Unmarshal(f.Metadata, &md) == nil {
			in.UserID = md.UserID
		}
	}
	if f.StreamOptions != nil {
		in.IncludeUsage = f.StreamOptions.IncludeUsage
	}
	in.Features = f.features(ep, body)
	if len(problems) > 0 {
		return nil, &routing.Error{Status: 400, Code: routing.CodeInvalidRequest, Message: strings.Join(problems, "; ")}
	}
	return in, nil
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
