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

type gmBody struct {
	SystemInstruction *gmContent    `json:"systemInstruction,omitempty"`
	Contents          []gmContent   `json:"contents"`
	Tools             []gmTools     `json:"tools,omitempty"`
	ToolConfig        *gmToolConfig `json:"toolConfig,omitempty"`
	GenerationConfig  *gmGenConfig  `json:"generationConfig,omitempty"`
}

type gmContent struct {
	Role  string   `json:"role,omitempty"`
	Parts []gmPart `json:"parts"`
}

type gmPart struct {
	Text             *string     `json:"text,omitempty"`
	InlineData       *gmBlob     `json:"inlineData,omitempty"`
	FileData         *gmFile     `json:"fileData,omitempty"`
	FunctionCall     *gmCall     `json:"functionCall,omitempty"`
	FunctionResponse *gmResponse `json:"functionResponse,omitempty"`
	ThoughtSignature string      `json:"thoughtSignature,omitempty"`
}

type gmBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type gmFile struct {
	MimeType string `json:"mimeType"`
	FileURI  string `json:"fileUri"`
}

type gmCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type gmResponse struct {
	Name     string         `json:"name"`
	Response map[string]any `json:"response"`
}

type gmTools struct {
	FunctionDeclarations []gmFunction `json:"functionDeclarations"`
}

type gmFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type gmToolConfig struct {
	FunctionCallingConfig gmCallingConfig `json:"functionCallingConfig"`
}

type gmCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

type gmGenConfig struct {
	Temperature     *float64 `json:"temperature,omitempty"`
	TopP            *float64 `json:"topP,omitempty"`
	MaxOutputTokens int64    `json:"maxOutputTokens,omitempty"`
	StopSequences   []string `json:"stopSequences,omitempty"`
	// ResponseMimeType "application/json" and ResponseSchema say the
	// answer is JSON (following the schema).
	ResponseMimeType string          `json:"responseMimeType,omitempty"`
	ResponseSchema   json.RawMessage `json:"responseSchema,omitempty"`
}

// gmSkipSignature is the placeholder thought signature Google documents for
// function calls that a Gemini model did not make itself (a history
// translated from another format): Gemini 3 models refuse a past function
// call without one, older models ignore it. Only the first call of a model
// turn carries it, as Gemini's own answers do.
const gmSkipSignature = "skip_thought_signature_validator"

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
	b := gmBody{Contents: []gmContent{}}
	var sys []gmPart
	for _, p := range r.System {
		if p.Kind == PartText && p.Text != "" {
			sys = append(sys, gmText(p.Text))
		}
	}
	if len(sys) > 0 {
		b.SystemInstruction = &gmContent{Parts: sys}
	}
	names := map[string]string{}
	for _, m := range r.Messages {
		role := "user"
		if m.Role == RoleAssistant {
			role = "model"
		}
		parts, err := gmParts(m, names)
		if err != nil {
			return nil, err
		}
		if len(parts) == 0 {
			continue
		}
		if n := len(b.Contents); n > 0 && b.Contents[n-1].Role == role {
			b.Contents[n-1].Parts = append(b.Contents[n-1].Parts, parts...)
		} else {
			b.Contents = append(b.Contents, gmContent{Role: role, Parts: parts})
		}
	}
	for i := range b.Contents {
		gmOrderTurn(b.Contents[i].Parts)
	}
	if len(r.Tools) > 0 {
		decls := make([]gmFunction, 0, len(r.Tools))
		for _, t := range r.Tools {
			params, err := geminiSchema(t.Parameters)
			if err != nil {
				return nil, badf("", "tool %q: parameters: %v", t.Name, err)
			}
			decls = append(decls, gmFunction{Name: t.Name, Description: t.Description, Parameters: params})
		}
		b.Tools = []gmTools{{FunctionDeclarations: decls}}
		switch r.ToolChoice.Mode {
		case ToolNone:
			b.ToolConfig = &gmToolConfig{gmCallingConfig{Mode: "NONE"}}
		case ToolRequired:
			b.ToolConfig = &gmToolConfig{gmCallingConfig{Mode: "ANY"}}
		case ToolNamed:
			b.ToolConfig = &gmToolConfig{gmCallingConfig{Mode: "ANY", AllowedFunctionNames: []string{r.ToolChoice.Name}}}
		}
	}
	gc := gmGenConfig{Temperature: r.Temperature, TopP: r.TopP, MaxOutputTokens: r.MaxOutput, StopSequences: r.Stop}
	if rf := r.ResponseFormat; rf != nil {
		gc.ResponseMimeType = "application/json"
		schema, err := geminiSchema(rf.Schema)
		if err != nil {
			return nil, badf("", "response format schema: %v", err)
		}
		gc.ResponseSchema = schema
	}
	if gc.Temperature != nil || gc.TopP != nil || gc.MaxOutputTokens > 0 || len(gc.StopSequences) > 0 || gc.ResponseMimeType != "" {
		b.GenerationConfig = &gc
	}
	return renderJSON(b)
}

func gmText(s string) gmPart { return gmPart{Text: &s} }

// gmParts writes a turn's parts; names maps the tool call ids seen so far
// to their tool names.
func gmParts(m Message, names map[string]string) ([]gmPart, error) {
	var out, images []gmPart
	signed := false
	for _, p := range m.Parts {
		switch p.Kind {
		case PartText:
			if p.Text != "" {
				out = append(out, gmText(p.Text))
			}
		case PartImage:
			out = append(out, gmImage(p))
		case PartToolCall:
			args, err := renderArgs(p.Arguments)
			if err != nil {
				return nil, err
			}
			names[p.ToolCallID] = p.ToolName
			part := gmPart{FunctionCall: &gmCall{Name: p.ToolName, Args: args}}
			if !signed {
				part.ThoughtSignature = gmSkipSignature
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
			out = append(out, gmPart{FunctionResponse: &gmResponse{Name: name, Response: map[string]any{key: resultText(p.Content)}}})
			for _, c := range p.Content {
				if c.Kind == PartImage {
					images = append(images, gmImage(c))
				}
			}
		}
	}
	return append(out, images...), nil
}

// gmOrderTurn moves a turn's functionResponse parts ahead of its other
// parts, keeping the order within each kind.
func gmOrderTurn(parts []gmPart) {
	var first, rest []gmPart
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

// gmImage writes an image part: inlineData, or fileData for a URL.
func gmImage(p Part) gmPart {
	if p.Data != "" {
		return gmPart{InlineData: &gmBlob{MimeType: p.MediaType, Data: p.Data}}
	}
	return gmPart{FileData: &gmFile{MimeType: gmGuessMime(p.URL), FileURI: p.URL}}
}

// gmGuessMime is the image media type a URL's file name suggests,
// image/jpeg when it suggests none.
func gmGuessMime(u string) string {
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

// gmSchemaKeys are the keys of Gemini's Schema object; geminiSchema drops
// every other key.
var gmSchemaKeys = map[string]bool{
	"type": true, "format": true, "title": true, "description": true,
	"nullable": true, "enum": true, "maxItems": true, "minItems": true,
	"properties": true, "required": true, "minProperties": true,
	"maxProperties": true, "minLength": true, "maxLength": true,
	"pattern": true, "example": true, "anyOf": true,
	"propertyOrdering": true, "default": true, "items": true,
	"minimum": true, "maximum": true,
}

// geminiSchema rewrites a JSON schema into Gemini's subset (see
// RenderGemini), keeping key order. nil (or an object schema without
// properties) gives nil: the function takes no parameters.
func geminiSchema(schema json.RawMessage) (json.RawMessage, error) {
	if len(schema) == 0 {
		return nil, nil
	}
	root, err := jsonTree(schema)
	if err != nil {
		return nil, err
	}
	if root.kind != '{' {
		return nil, errors.New("must be an object")
	}
	root = gmSchemaNode(root)
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

// gmSchemaNode rewrites one schema object (a non-object is kept as is).
func gmSchemaNode(n *jnode) *jnode {
	if n.kind != '{' {
		return n
	}
	out := &jnode{kind: '{'}
	nullable := false
	for i, k := range n.keys {
		if !gmSchemaKeys[k] {
			continue
		}
		v := n.vals[i]
		switch k {
		case "type":
			if v.kind == '[' {
				var t *jnode
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
				p := &jnode{kind: '{'}
				for j, name := range v.keys {
					p.keys = append(p.keys, name)
					p.vals = append(p.vals, gmSchemaNode(v.vals[j]))
				}
				v = p
			}
		case "items":
			v = gmSchemaNode(v)
		case "anyOf":
			if v.kind == '[' {
				a := &jnode{kind: '['}
				for _, e := range v.vals {
					a.vals = append(a.vals, gmSchemaNode(e))
				}
				v = a
			}
		}
		out.keys = append(out.keys, k)
		out.vals = append(out.vals, v)
	}
	if nullable && out.get("nullable") == nil {
		out.keys = append(out.keys, "nullable")
		out.vals = append(out.vals, &jnode{kind: 'v', raw: []byte("true")})
	}
	return out
}

// jnode is a JSON value that keeps the order of object keys: kind '{'
// (keys, vals), '[' (vals), 's' (a string, raw its JSON) or 'v' (another
// scalar, raw its JSON).
type jnode struct {
	kind byte
	keys []string
	vals []*jnode
	raw  []byte
}

// get returns the value of key k of an object node, nil when none.
func (n *jnode) get(k string) *jnode {
	for i, key := range n.keys {
		if key == k {
			return n.vals[i]
		}
	}
	return nil
}

// jsonTree reads one JSON value into a jnode tree.
func jsonTree(data []byte) (*jnode, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := jsonTreeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return n, nil
}

func jsonTreeValue(dec *json.Decoder) (*jnode, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &jnode{kind: '{'}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, errors.New("object key is not a string")
				}
				v, err := jsonTreeValue(dec)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k)
				n.vals = append(n.vals, v)
			}
			_, err := dec.Token()
			return n, err
		case '[':
			n := &jnode{kind: '['}
			for dec.More() {
				v, err := jsonTreeValue(dec)
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
		raw, err := renderJSON(t)
		return &jnode{kind: 's', raw: raw}, err
	case json.Number:
		return &jnode{kind: 'v', raw: []byte(t.String())}, nil
	case bool:
		if t {
			return &jnode{kind: 'v', raw: []byte("true")}, nil
		}
		return &jnode{kind: 'v', raw: []byte("false")}, nil
	case nil:
		return &jnode{kind: 'v', raw: []byte("null")}, nil
	}
	return nil, errors.New("unexpected token")
}

// write writes n as compact JSON.
func (n *jnode) write(b *bytes.Buffer) {
	switch n.kind {
	case '{':
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kr, _ := renderJSON(k)
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
