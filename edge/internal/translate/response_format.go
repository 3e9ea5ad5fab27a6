package translate

import (
	"encoding/json"
)

// ResponseFormat asks for an answer that is JSON: any JSON object when
// Schema is nil (OpenAI json_object), else JSON following Schema (OpenAI
// json_schema, a routing feature: R-FMT-3 sends such a call only to
// members that can enforce it).
type ResponseFormat struct {
	// Schema is the JSON schema the answer must follow; nil for any JSON
	// object.
	Schema json.RawMessage
	// Name, Description and Strict are OpenAI's json_schema metadata.
	Name, Description string
	Strict            *bool
}

// reqRFFields are the members of a response format object: chat nests the
// schema's in json_schema, Responses has them flat.
type reqRFFields struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
	JSONSchema  json.RawMessage `json:"json_schema"`
}

// reqParseResponseFormat reads a response format object found at path: chat's
// response_format (nested is true: the schema is in json_schema) or the
// Responses API's text.format (flat). {"type":"text"} is nil.
func reqParseResponseFormat(raw json.RawMessage, path string, nested bool) (*ResponseFormat, error) {
	if reqAbsent(raw) {
		return nil, nil
	}
	var f reqRFFields
	if err := reqObject(raw, path, &f); err != nil {
		return nil, err
	}
	switch f.Type {
	case "text":
		return nil, nil
	case "json_object":
		return &ResponseFormat{}, nil
	case "json_schema":
	case "":
		return nil, badf(reqJoin(path, "type"), "is required")
	default:
		return nil, badf(reqJoin(path, "type"), "must be text, json_object or json_schema")
	}
	spath := path
	if nested {
		spath = reqJoin(path, "json_schema")
		if reqAbsent(f.JSONSchema) {
			return nil, badf(spath, "is required")
		}
		f = reqRFFields{}
		if err := reqObject(raw, path, &struct {
			JSONSchema *reqRFFields `json:"json_schema"`
		}{&f}); err != nil {
			return nil, err
		}
	}
	if f.Name == "" {
		return nil, badf(reqJoin(spath, "name"), "is required")
	}
	rf := &ResponseFormat{Name: f.Name, Description: f.Description, Strict: f.Strict}
	var err error
	if rf.Schema, err = reqSchema(f.Schema, reqJoin(spath, "schema")); err != nil {
		return nil, err
	}
	if rf.Schema == nil {
		rf.Schema = json.RawMessage(`{}`)
	}
	return rf, nil
}

// reqOAResponseFormat is response_format in a chat body.
type reqOAResponseFormat struct {
	Type       string           `json:"type"`
	JSONSchema *reqOAJSONSchema `json:"json_schema,omitempty"`
}

type reqOAJSONSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// reqRenderOAFormat writes rf as a chat response_format; nil for free text.
func reqRenderOAFormat(rf *ResponseFormat) *reqOAResponseFormat {
	switch {
	case rf == nil:
		return nil
	case rf.Schema == nil:
		return &reqOAResponseFormat{Type: "json_object"}
	}
	return &reqOAResponseFormat{Type: "json_schema", JSONSchema: &reqOAJSONSchema{Name: rf.Name, Description: rf.Description, Schema: rf.Schema, Strict: rf.Strict}}
}
