package fakeprovider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// googleRoute maps the last path segment of a Gemini or Vertex model path,
// "{model}:{method}", to its operation. An unknown method routes nowhere
// (404 in Google's shape).
func googleRoute(f Flavor, last string) route {
	model, method, ok := strings.Cut(last, ":")
	if !ok || model == "" {
		return route{flavor: f}
	}
	rt := route{flavor: f, method: http.MethodPost, model: model}
	switch method {
	case "generateContent":
		rt.op = opGenerate
	case "streamGenerateContent":
		rt.op = opStreamGenerate
	case "batchEmbedContents":
		rt.op = opBatchEmbed
	}
	return rt
}

// authorizeGeminiKey checks the Gemini API key: the x-goog-api-key header
// or the key query parameter. A missing key is 403, a wrong one 400
// API_KEY_INVALID, as Google answers.
func (c *call) authorizeGeminiKey() bool {
	key := c.r.Header.Get("x-goog-api-key")
	if key == "" {
		key = c.r.URL.Query().Get("key")
	}
	if key == "" {
		c.fail(apiErr{kind: eForbidden, msg: googleNoCallerMsg})
		return false
	}
	if want := c.set.apiKey; want != "" && key != want {
		c.fail(apiErr{kind: eUnauthorized})
		return false
	}
	return true
}

// geminiRequest is the body of generateContent and streamGenerateContent,
// after normalizeGoogleKeys turned snake_case field names into camelCase.
type geminiRequest struct {
	Contents          json.RawMessage `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction"`
	Tools             []geminiTool    `json:"tools"`
	ToolConfig        *struct {
		FunctionCallingConfig *struct {
			Mode                 string   `json:"mode"`
			AllowedFunctionNames []string `json:"allowedFunctionNames"`
		} `json:"functionCallingConfig"`
	} `json:"toolConfig"`
	GenerationConfig *struct {
		MaxOutputTokens *int `json:"maxOutputTokens"`
		CandidateCount  *int `json:"candidateCount"`
	} `json:"generationConfig"`
}

type geminiContent struct {
	Role  string       `json:"role,omitempty"`
	Parts []geminiPart `json:"parts"`
}

// geminiPart is one part of a content. Exactly one field is set in
// answers; requests may carry other kinds (inline data, files), kept raw.
type geminiPart struct {
	Text             *string             `json:"text,omitempty"`
	FunctionCall     *geminiFunctionCall `json:"functionCall,omitempty"`
	FunctionResponse *struct {
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse,omitempty"`
	InlineData json.RawMessage `json:"inlineData,omitempty"`
	FileData   json.RawMessage `json:"fileData,omitempty"`
}

type geminiFunctionCall struct {
	ID   string         `json:"id,omitempty"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

type geminiTool struct {
	FunctionDeclarations []geminiFunctionDecl `json:"functionDeclarations"`
}

type geminiFunctionDecl struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description"`
	Parameters           json.RawMessage `json:"parameters"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
}

// geminiTopLevel are the fields GenerateContentRequest has; others are
// refused, as Google refuses unknown fields.
var geminiTopLevel = map[string]bool{
	"model": true, "contents": true, "tools": true, "toolConfig": true, "safetySettings": true,
	"systemInstruction": true, "generationConfig": true, "cachedContent": true, "labels": true,
}

// googleOpaque are the fields whose values are user data (schemas, function
// arguments and results), whose keys normalizeGoogleKeys leaves alone.
var googleOpaque = map[string]bool{
	"args": true, "response": true, "parameters": true, "parametersJsonSchema": true,
	"responseSchema": true, "responseJsonSchema": true, "labels": true, "properties": true,
}

// normalizeGoogleKeys rewrites snake_case field names to camelCase, since
// Google's JSON parser takes both, without entering user data.
func normalizeGoogleKeys(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			nk := snakeToCamel(k)
			if googleOpaque[nk] {
				out[nk] = val
			} else {
				out[nk] = normalizeGoogleKeys(val)
			}
		}
		return out
	case []any:
		for i := range x {
			x[i] = normalizeGoogleKeys(x[i])
		}
	}
	return v
}

// snakeToCamel turns "max_output_tokens" into "maxOutputTokens".
func snakeToCamel(s string) string {
	if !strings.Contains(s, "_") {
		return s
	}
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// decodeGoogle reads a Google request body into v: it must be a JSON object
// whose top-level fields are in allowed. It answers 400 INVALID_ARGUMENT
// otherwise.
func (c *call) decodeGoogle(v any, allowed map[string]bool) bool {
	body := bytes.TrimSpace(c.body)
	var raw any
	if len(body) == 0 || json.Unmarshal(body, &raw) != nil {
		c.badRequest("", "body is not a JSON object")
		return false
	}
	obj, ok := normalizeGoogleKeys(raw).(map[string]any)
	if !ok {
		c.badRequest("", "body is not a JSON object")
		return false
	}
	for k := range obj {
		if !allowed[k] {
			c.badRequest("", fmt.Sprintf("Unknown name %q: Cannot find field.", k))
			return false
		}
	}
	norm, _ := json.Marshal(obj)
	orig := c.body
	c.body = norm
	ok = c.decodeBody(v)
	c.body = orig
	return ok
}

// googleFieldErr answers 400 INVALID_ARGUMENT naming a field the way
// Google's request validation does.
func (c *call) googleFieldErr(field, problem string) {
	c.fail(apiErr{kind: eBadRequest, msg: "* GenerateContentRequest." + field + ": " + problem + "\n"})
}

// checkContents validates contents as Gemini does and returns them.
func (c *call) checkContents(raw json.RawMessage) ([]geminiContent, bool) {
	var contents []geminiContent
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		c.googleFieldErr("contents", "contents is not specified")
		return nil, false
	}
	if err := json.Unmarshal(raw, &contents); err != nil {
		c.badRequest("contents", "expected a list of Content")
		return nil, false
	}
	if len(contents) == 0 {
		c.googleFieldErr("contents", "contents is not specified")
		return nil, false
	}
	for i, ct := range contents {
		switch ct.Role {
		case "", "user", "model", "function":
		default:
			c.fail(apiErr{kind: eBadRequest, msg: "Please use a valid role: user, model."})
			return nil, false
		}
		if len(ct.Parts) == 0 {
			c.googleFieldErr(fmt.Sprintf("contents[%d].parts", i), "contents.parts must not be empty.")
			return nil, false
		}
		for j, p := range ct.Parts {
			if p.Text == nil && p.FunctionCall == nil && p.FunctionResponse == nil && p.InlineData == nil && p.FileData == nil {
				c.googleFieldErr(fmt.Sprintf("contents[%d].parts[%d].data", i, j), "required oneof field 'data' must have one initialized field")
				return nil, false
			}
		}
	}
	return contents, true
}

type geminiCandidate struct {
	Content      geminiContent `json:"content"`
	FinishReason string        `json:"finishReason,omitempty"`
	Index        int           `json:"index"`
}

type geminiModality struct {
	Modality   string `json:"modality"`
	TokenCount int    `json:"tokenCount"`
}

type geminiUsage struct {
	PromptTokenCount        int              `json:"promptTokenCount"`
	CandidatesTokenCount    int              `json:"candidatesTokenCount,omitempty"`
	TotalTokenCount         int              `json:"totalTokenCount"`
	CachedContentTokenCount int              `json:"cachedContentTokenCount,omitempty"`
	PromptTokensDetails     []geminiModality `json:"promptTokensDetails,omitempty"`
}

type geminiResponse struct {
	Candidates    []geminiCandidate `json:"candidates"`
	UsageMetadata geminiUsage       `json:"usageMetadata"`
	ModelVersion  string            `json:"modelVersion"`
	CreateTime    string            `json:"createTime,omitempty"`
	ResponseID    string            `json:"responseId"`
}

// newGeminiUsage reports u the Google way: promptTokenCount includes the
// cached tokens, which cachedContentTokenCount repeats.
func newGeminiUsage(u usage, output int) geminiUsage {
	return geminiUsage{
		PromptTokenCount:        u.prompt,
		CandidatesTokenCount:    output,
		TotalTokenCount:         u.prompt + output,
		CachedContentTokenCount: u.cached,
		PromptTokensDetails:     []geminiModality{{Modality: "TEXT", TokenCount: u.prompt}},
	}
}

// geminiReply is what the model says: a function call, or text (c.word)
// when call is nil.
type geminiReply struct {
	call *geminiFunctionCall
}

// generate answers generateContent and streamGenerateContent: a function
// call when the request asks for one (see chooseFunctionCall), text about
// the result when the last turn returns one, else the usual text.
func (c *call) generate() {
	var req geminiRequest
	if !c.decodeGoogle(&req, geminiTopLevel) {
		return
	}
	c.s.setModel(c.seq, c.model)
	contents, ok := c.checkContents(req.Contents)
	if !ok {
		return
	}
	var maxTokens *int
	if gc := req.GenerationConfig; gc != nil {
		if gc.MaxOutputTokens != nil && *gc.MaxOutputTokens < 0 {
			c.googleFieldErr("generation_config.max_output_tokens", "max_output_tokens must be positive.")
			return
		}
		if gc.MaxOutputTokens != nil && *gc.MaxOutputTokens > 0 {
			maxTokens = gc.MaxOutputTokens
		}
		if gc.CandidateCount != nil && (*gc.CandidateCount < 1 || *gc.CandidateCount > 8) {
			c.googleFieldErr("generation_config.candidate_count", "candidate_count must be between 1 and 8.")
			return
		}
	}
	decls := declaredFunctions(req.Tools)
	mode := ""
	var allowed []string
	if tc := req.ToolConfig; tc != nil && tc.FunctionCallingConfig != nil {
		mode = strings.ToUpper(tc.FunctionCallingConfig.Mode)
		allowed = tc.FunctionCallingConfig.AllowedFunctionNames
		switch mode {
		case "", "MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED":
		default:
			c.badRequest("tool_config.function_calling_config.mode", fmt.Sprintf("invalid value %q", tc.FunctionCallingConfig.Mode))
			return
		}
		if mode == "ANY" && len(decls) == 0 {
			c.fail(apiErr{kind: eBadRequest, msg: "Function calling config is set without function_declarations."})
			return
		}
	}

	u, truncated := c.plan(maxTokens)
	reply := geminiReply{}
	switch fr := lastFunctionResponse(contents); {
	case fr != "":
		truncated = c.useReply(fr, &u, maxTokens)
	default:
		if d, ok := chooseFunctionCall(decls, mode, allowed, lastUserText(contents)); ok {
			reply.call = &geminiFunctionCall{Name: d.Name, Args: placeholderArgs(d)}
			truncated = false
		}
	}
	if !c.admit(u.prompt, u.output) {
		return
	}
	finish := "STOP"
	if truncated {
		finish = "MAX_TOKENS"
	}
	resp := geminiResponse{ModelVersion: c.model, ResponseID: newGoogleResponseID()}
	if c.route.flavor == FlavorVertex {
		resp.CreateTime = c.s.now().UTC().Format(time.RFC3339Nano)
	}
	if c.route.op == opStreamGenerate {
		c.geminiStream(resp, reply, u, finish)
		return
	}
	if !c.waitWhole(u.output) {
		return
	}
	part := geminiPart{FunctionCall: reply.call}
	if reply.call == nil {
		t := c.text(u.output)
		part = geminiPart{Text: &t}
	}
	resp.Candidates = []geminiCandidate{{Content: geminiContent{Role: "model", Parts: []geminiPart{part}}, FinishReason: finish}}
	resp.UsageMetadata = newGeminiUsage(u, u.output)
	c.writeJSON(http.StatusOK, resp)
}

// geminiStream sends a Gemini answer as a stream: one chunk per output
// token, a token delay apart, every chunk carrying the usage so far and
// the last one the finish reason; a function call is one chunk. With
// ?alt=sse each chunk is an SSE data event; otherwise the chunks are the
// elements of one JSON array, as Google sends them.
func (c *call) geminiStream(resp geminiResponse, reply geminiReply, u usage, finish string) {
	if !c.sleep(c.set.latency) {
		return
	}
	sse := c.r.URL.Query().Get("alt") == "sse"
	if sse {
		c.startSSE()
	} else {
		c.w.Header().Set("Cache-Control", "no-cache")
		c.writeHead(http.StatusOK, "application/json; charset=UTF-8")
		c.flush()
	}
	first := true
	send := func(part geminiPart, finish string, output int) bool {
		resp.Candidates = []geminiCandidate{{Content: geminiContent{Role: "model", Parts: []geminiPart{part}}, FinishReason: finish}}
		resp.UsageMetadata = newGeminiUsage(u, output)
		data := mustJSON(resp)
		if sse {
			return c.sseData(data)
		}
		if c.cutNow() {
			c.cut()
			return false
		}
		sep := ",\r\n"
		if first {
			sep = "["
		}
		first = false
		if _, err := c.w.Write(append([]byte(sep), data...)); err != nil {
			return false
		}
		c.flush()
		return true
	}
	switch {
	case reply.call != nil:
		if !send(geminiPart{FunctionCall: reply.call}, finish, u.output) {
			return
		}
	case u.output == 0:
		empty := ""
		if !send(geminiPart{Text: &empty}, finish, 0) {
			return
		}
	default:
		for i := range u.output {
			if !c.sleep(c.set.tokenDelay) {
				return
			}
			t := c.word(i)
			f := ""
			if i == u.output-1 {
				f = finish
			}
			if !send(geminiPart{Text: &t}, f, i+1) {
				return
			}
		}
	}
	if !sse {
		if _, err := c.w.Write([]byte("]")); err != nil {
			return
		}
	}
	c.finishStream()
}

// declaredFunctions returns every function the tools declare.
func declaredFunctions(tools []geminiTool) []geminiFunctionDecl {
	var out []geminiFunctionDecl
	for _, t := range tools {
		for _, d := range t.FunctionDeclarations {
			if d.Name != "" {
				out = append(out, d)
			}
		}
	}
	return out
}

// chooseFunctionCall picks the function to call, if any: with mode ANY the
// first allowed function the text names, else the first allowed one; with
// mode AUTO (or none) a declared function the text names. Mode NONE never
// calls.
func chooseFunctionCall(decls []geminiFunctionDecl, mode string, allowed []string, text string) (geminiFunctionDecl, bool) {
	if len(decls) == 0 || mode == "NONE" {
		return geminiFunctionDecl{}, false
	}
	candidates := decls
	if mode == "ANY" && len(allowed) > 0 {
		candidates = nil
		for _, d := range decls {
			for _, a := range allowed {
				if d.Name == a {
					candidates = append(candidates, d)
					break
				}
			}
		}
	}
	for _, d := range candidates {
		if strings.Contains(text, d.Name) {
			return d, true
		}
	}
	if mode == "ANY" && len(candidates) > 0 {
		return candidates[0], true
	}
	return geminiFunctionDecl{}, false
}

// lastUserText joins the text parts of the last user turn.
func lastUserText(contents []geminiContent) string {
	for i := len(contents) - 1; i >= 0; i-- {
		if contents[i].Role != "" && contents[i].Role != "user" {
			continue
		}
		var b strings.Builder
		for _, p := range contents[i].Parts {
			if p.Text != nil {
				b.WriteString(*p.Text)
				b.WriteByte(' ')
			}
		}
		return b.String()
	}
	return ""
}

// maxResultEcho bounds how much of a function result an answer repeats.
const maxResultEcho = 200

// lastFunctionResponse returns the text answering a last turn that returns
// function results ("" when the last turn returns none): it names each
// function and repeats its result, cut to maxResultEcho bytes.
func lastFunctionResponse(contents []geminiContent) string {
	var results []toolResult
	for _, p := range contents[len(contents)-1].Parts {
		if fr := p.FunctionResponse; fr != nil {
			results = append(results, toolResult{fr.Name, compactJSON(fr.Response)})
		}
	}
	return resultText(results)
}

// placeholderArgs builds the arguments of a call to d: each required
// property of its schema gets a placeholder of its type (a string, the
// first enum value, 1, true); the rest are left out.
func placeholderArgs(d geminiFunctionDecl) map[string]any {
	schema := d.Parameters
	if len(schema) == 0 || string(schema) == "null" {
		schema = d.ParametersJSONSchema
	}
	var s struct {
		Required   []string `json:"required"`
		Properties map[string]struct {
			Type any   `json:"type"`
			Enum []any `json:"enum"`
		} `json:"properties"`
	}
	args := map[string]any{}
	if json.Unmarshal(schema, &s) != nil {
		return args
	}
	for _, name := range s.Required {
		p, ok := s.Properties[name]
		if !ok {
			continue
		}
		if len(p.Enum) > 0 {
			args[name] = p.Enum[0]
			continue
		}
		typ, _ := p.Type.(string)
		switch strings.ToLower(typ) {
		case "string":
			args[name] = "example " + name
		case "integer", "number":
			args[name] = 1
		case "boolean":
			args[name] = true
		}
	}
	return args
}

// newGoogleResponseID returns an ID shaped like Gemini's responseId.
func newGoogleResponseID() string {
	return strings.TrimPrefix(newID("g"), "g")[:22]
}

type batchEmbedRequest struct {
	Requests []struct {
		Model                string         `json:"model"`
		Content              *geminiContent `json:"content"`
		TaskType             string         `json:"taskType"`
		Title                string         `json:"title"`
		OutputDimensionality *int           `json:"outputDimensionality"`
	} `json:"requests"`
}

// maxEmbedBatch is the most requests one batchEmbedContents takes.
const maxEmbedBatch = 100

// batchEmbed answers batchEmbedContents with one deterministic vector per
// request, the same vector the OpenAI flavor gives the same text.
func (c *call) batchEmbed() {
	var req batchEmbedRequest
	if !c.decodeGoogle(&req, map[string]bool{"requests": true}) {
		return
	}
	c.s.setModel(c.seq, c.model)
	bad := func(field, problem string) {
		c.fail(apiErr{kind: eBadRequest, msg: "* BatchEmbedContentsRequest." + field + ": " + problem + "\n"})
	}
	if len(req.Requests) == 0 {
		bad("requests", "requests is not specified")
		return
	}
	if len(req.Requests) > maxEmbedBatch {
		bad("requests", fmt.Sprintf("at most %d requests can be in one batch", maxEmbedBatch))
		return
	}
	texts := make([]string, len(req.Requests))
	dims := make([]int, len(req.Requests))
	for i, r := range req.Requests {
		field := fmt.Sprintf("requests[%d]", i)
		if r.Model != "models/"+c.model && !strings.HasSuffix(r.Model, "/models/"+c.model) {
			bad(field+".model", fmt.Sprintf("the model %q must be the model of the URL, models/%s", r.Model, c.model))
			return
		}
		if r.Content == nil || len(r.Content.Parts) == 0 {
			bad(field+".content", "content is not specified")
			return
		}
		var b strings.Builder
		for _, p := range r.Content.Parts {
			if p.Text != nil {
				b.WriteString(*p.Text)
			}
		}
		if b.Len() == 0 {
			bad(field+".content", "content must hold text")
			return
		}
		texts[i], dims[i] = b.String(), c.s.embedDims
		if d := r.OutputDimensionality; d != nil {
			if *d < 1 || *d > 3072 {
				bad(field+".output_dimensionality", "output_dimensionality must be between 1 and 3072")
				return
			}
			dims[i] = *d
		}
	}
	u, _ := c.plan(nil)
	if !c.admit(u.prompt, 0) || !c.sleep(c.set.latency) {
		return
	}
	type values struct {
		Values []float32 `json:"values"`
	}
	out := struct {
		Embeddings []values `json:"embeddings"`
	}{Embeddings: make([]values, len(texts))}
	for i, t := range texts {
		out.Embeddings[i] = values{Values: vector(t, dims[i])}
	}
	c.writeJSON(http.StatusOK, out)
}
