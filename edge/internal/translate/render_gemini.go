package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

type reqGMBody struct {
	SystemInstruction *reqGMContent    `json:"systemInstruction,omitempty"`
	Contents          []reqGMContent   `json:"contents"`
	Tools             []reqGMTools     `json:"tools,omitempty"`
	ToolConfig        *reqGMToolConfig `json:"toolConfig,omitempty"`
	GenerationConfig  *reqGMGenConfig  `json:"generationConfig,omitempty"`
}

type reqGMContent struct {
	Role  string      `json:"role,omitempty"`
	Parts []reqGMPart `json:"parts"`
}

type reqGMPart struct {
	Text             *string        `json:"text,omitempty"`
	InlineData       *reqGMBlob     `json:"inlineData,omitempty"`
	FileData         *reqGMFile     `json:"fileData,omitempty"`
	FunctionCall     *reqGMCall     `json:"functionCall,omitempty"`
	FunctionResponse *reqGMResponse `json:"functionResponse,omitempty"`
	ThoughtSignature string         `json:"thoughtSignature,omitempty"`
}

type reqGMBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type reqGMFile struct {
	MimeType string `json:"mimeType"`
	FileURI  string `json:"fileUri"`
}

type reqGMCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type reqGMResponse struct {
	Name     string         `json:"name"`
	Response map[string]any `json:"response"`
}

type reqGMTools struct {
	FunctionDeclarations []reqGMFunction `json:"functionDeclarations"`
}

type reqGMFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type reqGMToolConfig struct {
	FunctionCallingConfig reqGMCallingConfig `json:"functionCallingConfig"`
}

type reqGMCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

type reqGMGenConfig struct {
	Temperature     *float64 `json:"temperature,omitempty"`
	TopP            *float64 `json:"topP,omitempty"`
	MaxOutputTokens int64    `json:"maxOutputTokens,omitempty"`
	StopSequences   []string `json:"stopSequences,omitempty"`
	// ResponseMimeType "application/json" and ResponseSchema say the
	// answer is JSON (following the schema).
	ResponseMimeType string          `json:"responseMimeType,omitempty"`
	ResponseSchema   json.RawMessage `json:"responseSchema,omitempty"`
}

// reqGMSkipSignature is the placeholder thought signature Google documents for
// function calls that a Gemini model did not make itself (a history
// translated from another format): Gemini 3 models refuse a past function
// call without one, older models ignore it. Only the first call of a model
// turn carries it, as Gemini's own answers do.
const reqGMSkipSignature = "skip_thought_signature_validator"

// RenderGemini writes r as a Gemini generateContent request body (R-FMT-2).
// The model and streaming are in the URL, not the body. The choices it
// makes:
//   - Roles are "user" and "model"; consecutive turns of one role are
//     merged, empty text parts and turns left empty are dropped.
//   - An image by URL is sent as fileData with the media type its file
//     name suggests (image/jpeg when it suggests none); an inline image as
//     inlineData.
//   - A tool result is a functionResponse named after its call (found by
//     id among the earlier turns), with response {"output": text}, or
//     {"error": text} for a failed tool; functionResponse parts come first
//     in their turn, and images a tool returned follow as image parts.
//   - Parameter schemas keep only the keys Gemini's Schema knows (type,
//     format, title, description, nullable, enum, items, properties,
//     required, anyOf, propertyOrdering, min/max bounds, pattern, default,
//     example), recursively and in their order: "$schema",
//     "additionalProperties" and the like are dropped; a type list such as
//     ["string","null"] becomes type "string" with nullable true. A tool
//     whose schema declares no properties is sent without parameters.
//   - A response format is generationConfig.responseMimeType
//     "application/json", with its schema, rewritten as for parameters,
//     as responseSchema.
//   - toolConfig is sent only with tools and only when not the default:
//     mode NONE, ANY, or ANY with allowedFunctionNames for a named tool.
func RenderGemini(r *Request) ([]byte, error) {
	if r == nil {
		return nil, fmt.Errorf("translate: nil request")
	}
	b := reqGMBody{Contents: []reqGMContent{}}
	var sys []reqGMPart
	for _, p := range r.System {
		if p.Kind == PartText && p.Text != "" {
			sys = append(sys, reqGMText(p.Text))
		}
	}
	if len(sys) > 0 {
		b.SystemInstruction = &reqGMContent{Parts: sys}
	}
	names := map[string]string{}
	for _, m := range r.Messages {
		role := "user"
		if m.Role == RoleAssistant {
			role = "model"
		}
		parts, err := reqGMParts(m, names)
		if err != nil {
			return nil, err
		}
		if len(parts) == 0 {
			continue
		}
		if n := len(b.Contents); n > 0 && b.Contents[n-1].Role == role {
			b.Contents[n-1].Parts = append(b.Contents[n-1].Parts, parts...)
		} else {
			b.Contents = append(b.Contents, reqGMContent{Role: role, Parts: parts})
		}
	}
	for i := range b.Contents {
		reqGMOrderTurn(b.Contents[i].Parts)
	}
	if len(r.Tools) > 0 {
		decls := make([]reqGMFunction, 0, len(r.Tools))
		for _, t := range r.Tools {
			params, err := reqGeminiSchema(t.Parameters)
			if err != nil {
				return nil, badf("", "tool %q: parameters: %v", t.Name, err)
			}
			decls = append(decls, reqGMFunction{Name: t.Name, Description: t.Description, Parameters: params})
		}
		b.Tools = []reqGMTools{{FunctionDeclarations: decls}}
		switch r.ToolChoice.Mode {
		case ToolNone:
			b.ToolConfig = &reqGMToolConfig{reqGMCallingConfig{Mode: "NONE"}}
		case ToolRequired:
			b.ToolConfig = &reqGMToolConfig{reqGMCallingConfig{Mode: "ANY"}}
		case ToolNamed:
			b.ToolConfig = &reqGMToolConfig{reqGMCallingConfig{Mode: "ANY", AllowedFunctionNames: []string{r.ToolChoice.Name}}}
		}
	}
	gc := reqGMGenConfig{Temperature: r.Temperature, TopP: r.TopP, MaxOutputTokens: r.MaxOutput, StopSequences: r.Stop}
	if rf := r.ResponseFormat; rf != nil {
		gc.ResponseMimeType = "application/json"
		schema, err := reqGeminiSchema(rf.Schema)
		if err != nil {
			return nil, badf("", "response format schema: %v", err)
		}
		gc.ResponseSchema = schema
	}
	if gc.Temperature != nil || gc.TopP != nil || gc.MaxOutputTokens > 0 || len(gc.StopSequences) > 0 || gc.ResponseMimeType != "" {
		b.GenerationConfig = &gc
	}
	return reqRenderJSON(b)
}

func reqGMText(s string) reqGMPart { return reqGMPart{Text: &s} }

// reqGMParts writes a turn's parts; names maps the tool call ids seen so far
// to their tool names.
func reqGMParts(m Message, names map[string]string) ([]reqGMPart, error) {
	var out, images []reqGMPart
	signed := false
	for _, p := range m.Parts {
		switch p.Kind {
		case PartText:
			if p.Text != "" {
				out = append(out, reqGMText(p.Text))
			}
		case PartImage:
			out = append(out, reqGMImage(p))
		case PartToolCall:
			args, err := reqRenderArgs(p.Arguments)
			if err != nil {
				return nil, err
			}
			names[p.ToolCallID] = p.ToolName
			part := reqGMPart{FunctionCall: &reqGMCall{Name: p.ToolName, Args: args}}
			if !signed {
				part.ThoughtSignature = reqGMSkipSignature
				signed = true
			}
			out = append(out, part)
		case PartToolResult:
			name, ok := names[p.ToolCallID]
			if !ok {
				return nil, badf("", "tool result %q matches no earlier tool call", p.ToolCallID)
			}
			key := "output"
			if p.IsError {
				key = "error"
			}
			out = append(out, reqGMPart{FunctionResponse: &reqGMResponse{Name: name, Response: map[string]any{key: reqResultText(p.Content)}}})
			for _, c := range p.Content {
				if c.Kind == PartImage {
					images = append(images, reqGMImage(c))
				}
			}
		}
	}
	return append(out, images...), nil
}

// reqGMOrderTurn moves a turn's functionResponse parts ahead of its other
// parts, keeping the order within each kind.
func reqGMOrderTurn(parts []reqGMPart) {
	var first, rest []reqGMPart
	for _, p := range parts {
		if p.FunctionResponse != nil {
			first = append(first, p)
		} else {
			rest = append(rest, p)
		}
	}
	copy(parts, first)
	copy(parts[len(first):], rest)
}

// reqGMImage writes an image part: inlineData, or fileData for a URL.
func reqGMImage(p Part) reqGMPart {
	if p.Data != "" {
		return reqGMPart{InlineData: &reqGMBlob{MimeType: p.MediaType, Data: p.Data}}
	}
	return reqGMPart{FileData: &reqGMFile{MimeType: reqGMGuessMime(p.URL), FileURI: p.URL}}
}

// reqGMGuessMime is the image media type a URL's file name suggests,
// image/jpeg when it suggests none.
func reqGMGuessMime(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	switch strings.ToLower(path.Ext(u)) {
	case ".png":
		return "image/png"
	case ".gif":
		return "image/gif"
	case ".webp":
		return "image/webp"
	case ".heic":
		return "image/heic"
	case ".heif":
		return "image/heif"
	}
	return "image/jpeg"
}

// reqGMSchemaKeys are the keys of Gemini's Schema object; reqGeminiSchema drops
// every other key.
var reqGMSchemaKeys = map[string]bool{
	"type": true, "format": true, "title": true, "description": true,
	"nullable": true, "enum": true, "maxItems": true, "minItems": true,
	"properties": true, "required": true, "minProperties": true,
	"maxProperties": true, "minLength": true, "maxLength": true,
	"pattern": true, "example": true, "anyOf": true,
	"propertyOrdering": true, "default": true, "items": true,
	"minimum": true, "maximum": true,
}

// reqGeminiSchema rewrites a JSON schema into Gemini's subset (see
// RenderGemini), keeping key order. nil (or an object schema without
// properties) gives nil: the function takes no parameters.
func reqGeminiSchema(schema json.RawMessage) (json.RawMessage, error) {
	if len(schema) == 0 {
		return nil, nil
	}
	root, err := reqSchemaTree(schema)
	if err != nil {
		return nil, err
	}
	if root.kind != '{' {
		return nil, errors.New("must be an object")
	}
	root = reqGMSchemaNode(root)
	props := root.get("properties")
	if props == nil || props.kind != '{' || len(props.keys) == 0 {
		if t := root.get("type"); t == nil || t.kind == 's' && string(t.raw) == `"object"` {
			return nil, nil
		}
	}
	var b bytes.Buffer
	root.write(&b)
	return json.RawMessage(b.Bytes()), nil
}

// reqGMSchemaNode rewrites one schema object (a non-object is kept as is).
func reqGMSchemaNode(n *reqSchemaNode) *reqSchemaNode {
	if n.kind != '{' {
		return n
	}
	out := &reqSchemaNode{kind: '{'}
	nullable := false
	for i, k := range n.keys {
		if !reqGMSchemaKeys[k] {
			continue
		}
		v := n.vals[i]
		switch k {
		case "type":
			if v.kind == '[' {
				var t *reqSchemaNode
				count := 0
				for _, e := range v.vals {
					if e.kind == 's' && string(e.raw) == `"null"` {
						nullable = true
						continue
					}
					t = e
					count++
				}
				if count != 1 {
					continue
				}
				v = t
			}
		case "properties":
			if v.kind == '{' {
				p := &reqSchemaNode{kind: '{'}
				for j, name := range v.keys {
					p.keys = append(p.keys, name)
					p.vals = append(p.vals, reqGMSchemaNode(v.vals[j]))
				}
				v = p
			}
		case "items":
			v = reqGMSchemaNode(v)
		case "anyOf":
			if v.kind == '[' {
				a := &reqSchemaNode{kind: '['}
				for _, e := range v.vals {
					a.vals = append(a.vals, reqGMSchemaNode(e))
				}
				v = a
			}
		}
		out.keys = append(out.keys, k)
		out.vals = append(out.vals, v)
	}
	if nullable && out.get("nullable") == nil {
		out.keys = append(out.keys, "nullable")
		out.vals = append(out.vals, &reqSchemaNode{kind: 'v', raw: []byte("true")})
	}
	return out
}

// reqSchemaNode is a JSON value that keeps the order of object keys: kind '{'
// (keys, vals), '[' (vals), 's' (a string, raw its JSON) or 'v' (another
// scalar, raw its JSON).
type reqSchemaNode struct {
	kind byte
	keys []string
	vals []*reqSchemaNode
	raw  []byte
}

// get returns the value of key k of an object node, nil when none.
func (n *reqSchemaNode) get(k string) *reqSchemaNode {
	for i, key := range n.keys {
		if key == k {
			return n.vals[i]
		}
	}
	return nil
}

// reqSchemaTree reads one JSON value into a reqSchemaNode tree.
func reqSchemaTree(data []byte) (*reqSchemaNode, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := reqSchemaTreeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return n, nil
}

func reqSchemaTreeValue(dec *json.Decoder) (*reqSchemaNode, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &reqSchemaNode{kind: '{'}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, errors.New("object key is not a string")
				}
				v, err := reqSchemaTreeValue(dec)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k)
				n.vals = append(n.vals, v)
			}
			_, err := dec.Token()
			return n, err
		case '[':
			n := &reqSchemaNode{kind: '['}
			for dec.More() {
				v, err := reqSchemaTreeValue(dec)
				if err != nil {
					return nil, err
				}
				n.vals = append(n.vals, v)
			}
			_, err := dec.Token()
			return n, err
		}
		return nil, errors.New("unexpected delimiter")
	case string:
		raw, err := reqRenderJSON(t)
		return &reqSchemaNode{kind: 's', raw: raw}, err
	case json.Number:
		return &reqSchemaNode{kind: 'v', raw: []byte(t.String())}, nil
	case bool:
		if t {
			return &reqSchemaNode{kind: 'v', raw: []byte("true")}, nil
		}
		return &reqSchemaNode{kind: 'v', raw: []byte("false")}, nil
	case nil:
		return &reqSchemaNode{kind: 'v', raw: []byte("null")}, nil
	}
	return nil, errors.New("unexpected token")
}

// write writes n as compact JSON.
func (n *reqSchemaNode) write(b *bytes.Buffer) {
	switch n.kind {
	case '{':
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kr, _ := reqRenderJSON(k)
			b.Write(kr)
			b.WriteByte(':')
			n.vals[i].write(b)
		}
		b.WriteByte('}')
	case '[':
		b.WriteByte('[')
		for i, v := range n.vals {
			if i > 0 {
				b.WriteByte(',')
			}
			v.write(b)
		}
		b.WriteByte(']')
	default:
		b.Write(n.raw)
	}
}
