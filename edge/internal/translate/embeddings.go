package translate

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"weir.dev/routing"
)

// embedRequest is the part of an OpenAI /v1/embeddings request the
// translation reads.
type embedRequest struct {
	Input          json.RawMessage `json:"input"`
	Dimensions     json.RawMessage `json:"dimensions"`
	EncodingFormat json.RawMessage `json:"encoding_format"`
}

// RenderGeminiEmbed rewrites an OpenAI /v1/embeddings request body into a
// Gemini batchEmbedContents body for model (R-FMT-7): one request per
// input, in order, each {"model":"models/<model>","content":{"parts":
// [{"text":…}]}}, with outputDimensionality when the caller gave
// dimensions. input is a string or a list of strings; token arrays (a list
// of integers, or of lists of integers) cannot be said to Gemini. user is
// dropped (R-FMT-3). A body it cannot read or carry is a *BadRequest.
func RenderGeminiEmbed(body []byte, model string) ([]byte, error) {
	var r embedRequest
	if err := jsonObject(body, &r); err != nil {
		return nil, badf("", "the body is not a JSON object: %v", err)
	}
	inputs, err := embedInputs(r.Input)
	if err != nil {
		return nil, err
	}
	var dims int64
	if d := bytes.TrimSpace(r.Dimensions); len(d) > 0 && string(d) != "null" {
		if err := json.Unmarshal(d, &dims); err != nil || dims <= 0 {
			return nil, badf("dimensions", "must be a positive integer")
		}
	}
	if _, err := encodingFormat(r.EncodingFormat); err != nil {
		return nil, err
	}
	name := model
	if !strings.HasPrefix(name, "models/") {
		name = "models/" + name
	}
	type part struct {
		Text string `json:"text"`
	}
	type content struct {
		Parts []part `json:"parts"`
	}
	type request struct {
		Model                string  `json:"model"`
		Content              content `json:"content"`
		OutputDimensionality int64   `json:"outputDimensionality,omitempty"`
	}
	out := struct {
		Requests []request `json:"requests"`
	}{make([]request, len(inputs))}
	for i, in := range inputs {
		out.Requests[i] = request{Model: name, Content: content{Parts: []part{{Text: in}}}, OutputDimensionality: dims}
	}
	return json.Marshal(out)
}

// embedInputs reads input: a string or a non-empty list of strings.
func embedInputs(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badf("input", "required")
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, badf("input", "not a string: %v", err)
		}
		return []string{s}, nil
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, badf("input", "not a list: %v", err)
		}
		if len(items) == 0 {
			return nil, badf("input", "must not be empty")
		}
		out := make([]string, len(items))
		for i, it := range items {
			it = bytes.TrimSpace(it)
			if len(it) > 0 && (it[0] == '[' || it[0] == '-' || (it[0] >= '0' && it[0] <= '9')) {
				return nil, badf("input", "token arrays cannot be sent to a gemini member")
			}
			if err := json.Unmarshal(it, &out[i]); err != nil || len(it) == 0 || it[0] != '"' {
				return nil, badf("input["+strconv.Itoa(i)+"]", "must be a string")
			}
		}
		return out, nil
	}
	return nil, badf("input", "must be a string or a list of strings")
}

// encodingFormat reads encoding_format: "float" (or absent) is false,
// "base64" true.
func encodingFormat(raw json.RawMessage) (bool, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return false, badf("encoding_format", "must be \"float\" or \"base64\"")
	}
	switch s {
	case "float":
		return false, nil
	case "base64":
		return true, nil
	}
	return false, badf("encoding_format", "must be \"float\" or \"base64\"")
}

// EmbedShape reads what an OpenAI /v1/embeddings request body asks of
// the answer: base64 vectors (encoding_format "base64") and how many
// inputs it sends, so EncodeGeminiEmbed can check that every input got
// its vector. An unreadable body is (false, 0): no count to check.
func EmbedShape(body []byte) (b64 bool, inputs int) {
	var r embedRequest
	if jsonObject(body, &r) != nil {
		return false, 0
	}
	b, err := encodingFormat(r.EncodingFormat)
	in, ierr := embedInputs(r.Input)
	if ierr != nil {
		return err == nil && b, 0
	}
	return err == nil && b, len(in)
}

// EncodeGeminiEmbed rewrites a Gemini batchEmbedContents answer
// ({"embeddings":[{"values":[…]},…]}) into an OpenAI embeddings answer
// naming model (R-FMT-7): {"object":"list","data":[{"object":"embedding",
// "index":i,"embedding":…},…],"model":…,"usage":{…}}. In float mode each
// number is written exactly as Gemini wrote it; with base64 each vector is
// the standard base64 of its values as little-endian float32s, as OpenAI
// sends it (a value outside float32's range is an error).
//
// Gemini's batchEmbedContents reports no token counts: the usage is zero,
// in the answer and as returned. When inputCount > 0, an answer with
// another number of vectors is an error.
func EncodeGeminiEmbed(answer []byte, model string, b64 bool, inputCount int) ([]byte, routing.Usage, error) {
	var r struct {
		Embeddings *[]struct {
			Values []json.Number `json:"values"`
		} `json:"embeddings"`
	}
	if err := jsonObject(answer, &r); err != nil {
		return nil, routing.Usage{}, fmt.Errorf("translate: gemini embeddings answer: %w", err)
	}
	if r.Embeddings == nil {
		return nil, routing.Usage{}, errors.New("translate: gemini embeddings answer: embeddings: missing")
	}
	embs := *r.Embeddings
	if inputCount > 0 && len(embs) != inputCount {
		return nil, routing.Usage{}, fmt.Errorf("translate: gemini embeddings answer: %d vectors for %d inputs", len(embs), inputCount)
	}
	type item struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	out := struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
		Usage  struct {
			PromptTokens int64 `json:"prompt_tokens"`
			TotalTokens  int64 `json:"total_tokens"`
		} `json:"usage"`
	}{Object: "list", Data: make([]item, len(embs)), Model: model}
	for i, e := range embs {
		it := item{Object: "embedding", Index: i}
		if b64 {
			buf := make([]byte, 4*len(e.Values))
			for j, n := range e.Values {
				f, err := strconv.ParseFloat(string(n), 32)
				if err != nil || math.IsInf(f, 0) {
					return nil, routing.Usage{}, fmt.Errorf("translate: gemini embeddings answer: embeddings[%d].values[%d]: not a float32", i, j)
				}
				binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(float32(f)))
			}
			it.Embedding = base64.StdEncoding.EncodeToString(buf)
		} else {
			vals := e.Values
			if vals == nil {
				vals = []json.Number{}
			}
			it.Embedding = vals
		}
		out.Data[i] = it
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, routing.Usage{}, fmt.Errorf("translate: gemini embeddings answer: %w", err)
	}
	return b, routing.Usage{}, nil
}
