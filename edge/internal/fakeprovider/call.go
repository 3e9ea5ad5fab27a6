package fakeprovider

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// op is the operation a path asks for.
type op int

const (
	opNone op = iota
	opChat
	opEmbeddings
	opResponses
	opModels
	opMessages
	opInvoke
	opInvokeStream
	opGenerate
	opStreamGenerate
	opBatchEmbed
	opToken
)

// route is what the path says about a request.
type route struct {
	flavor Flavor
	op     op
	method string
	// model is the Azure deployment or the Bedrock model ID named by the
	// path, "" when the body names it.
	model string
	// deployment marks Azure's deployment paths, which need api-version.
	deployment bool
}

// route maps a request to a flavor and operation. Unknown paths get
// opNone and the flavor their prefix suggests, so the 404 has that
// flavor's shape.
func (s *Server) route(r *http.Request) route {
	rt := s.routePath(r)
	if rt.op != opNone && s.flavor != FlavorAll && rt.flavor != s.flavor {
		return route{flavor: s.flavor}
	}
	return rt
}

func (s *Server) routePath(r *http.Request) route {
	raw := r.URL.EscapedPath()
	seg := strings.Split(strings.Trim(raw, "/"), "/")
	for i := range seg {
		if u, err := url.PathUnescape(seg[i]); err == nil {
			seg[i] = u
		}
	}
	path := strings.Join(seg, "/")
	post := func(f Flavor, o op) route { return route{flavor: f, op: o, method: http.MethodPost} }
	switch path {
	case "v1/chat/completions":
		return post(FlavorOpenAI, opChat)
	case "v1/embeddings":
		return post(FlavorOpenAI, opEmbeddings)
	case "v1/responses":
		return post(FlavorOpenAI, opResponses)
	case "v1/messages":
		return post(FlavorAnthropic, opMessages)
	case "v1/models":
		if r.Header.Get("anthropic-version") != "" || r.Header.Get("x-api-key") != "" {
			return route{flavor: FlavorAnthropic, op: opModels, method: http.MethodGet}
		}
		return route{flavor: FlavorOpenAI, op: opModels, method: http.MethodGet}
	case "openai/v1/chat/completions":
		return post(FlavorAzure, opChat)
	case "openai/v1/embeddings":
		return post(FlavorAzure, opEmbeddings)
	case "openai/v1/responses":
		return post(FlavorAzure, opResponses)
	case "openai/v1/models":
		return route{flavor: FlavorAzure, op: opModels, method: http.MethodGet}
	}
	switch {
	case len(seg) >= 4 && seg[0] == "openai" && seg[1] == "deployments" && seg[2] != "":
		rt := route{flavor: FlavorAzure, method: http.MethodPost, model: seg[2], deployment: true}
		switch strings.Join(seg[3:], "/") {
		case "chat/completions":
			rt.op = opChat
		case "embeddings":
			rt.op = opEmbeddings
		case "responses":
			rt.op = opResponses
		}
		return rt
	case len(seg) == 3 && seg[0] == "model" && seg[1] != "":
		rt := route{flavor: FlavorBedrock, method: http.MethodPost, model: seg[1]}
		switch seg[2] {
		case "invoke":
			rt.op = opInvoke
		case "invoke-with-response-stream":
			rt.op = opInvokeStream
		}
		return rt
	case len(seg) == 3 && (seg[0] == "v1beta" || seg[0] == "v1") && seg[1] == "models":
		return googleRoute(FlavorGemini, seg[2])
	case len(seg) == 9 && (seg[0] == "v1" || seg[0] == "v1beta1") && seg[1] == "projects" && seg[3] == "locations" &&
		seg[5] == "publishers" && seg[6] == "google" && seg[7] == "models":
		return googleRoute(FlavorVertex, seg[8])
	case path == "token":
		return route{flavor: FlavorVertex, op: opToken, method: http.MethodPost}
	case len(seg) > 0 && (seg[0] == "v1beta" || seg[0] == "v1beta1" || seg[0] == "v1" && len(seg) > 1 && seg[1] == "projects"):
		flavor := FlavorGemini
		if seg[0] != "v1beta" {
			flavor = FlavorVertex
		}
		return route{flavor: flavor}
	case len(seg) > 0 && seg[0] == "openai":
		return route{flavor: FlavorAzure}
	case len(seg) > 0 && seg[0] == "model":
		return route{flavor: FlavorBedrock}
	case r.Header.Get("anthropic-version") != "":
		return route{flavor: FlavorAnthropic}
	}
	return route{flavor: FlavorOpenAI}
}

// call is one request being answered.
type call struct {
	s     *Server
	w     http.ResponseWriter
	r     *http.Request
	set   settings
	route route
	model string
	body  []byte
	seq   int
	reqID string
	// cutAfter is the number of stream events after which the connection
	// is cut, or -1.
	cutAfter int
	events   int
	// headerSent is set once the status line is written.
	headerSent bool
	// reply, when set, are the tokens of the answer instead of the
	// generated text (the answer to tool results).
	reply []string
}

// serve answers the call once its body is read.
func (c *call) serve(readErr error) {
	c.reqID = newID("")
	if c.route.op == opNone {
		c.fail(apiErr{kind: eNoRoute})
		return
	}
	if readErr != nil {
		var tooBig *http.MaxBytesError
		if errors.As(readErr, &tooBig) {
			c.w.Header().Set("Connection", "close")
			c.fail(apiErr{kind: eTooLarge})
			return
		}
		c.fail(apiErr{kind: eBadRequest, msg: "could not read the request body"})
		return
	}
	if c.r.Method != c.route.method {
		c.fail(apiErr{kind: eMethod})
		return
	}
	if c.route.deployment && c.r.URL.Query().Get("api-version") == "" {
		c.fail(apiErr{kind: eNoRoute})
		return
	}
	if c.route.op == opToken {
		// The token endpoint is the fake's identity service, not the
		// model: scripted faults and the buckets leave it alone.
		c.token()
		return
	}
	if f := c.s.nextFault(); f.Kind != FaultNone {
		if c.route.model == "" {
			c.model = peekModel(c.body)
			c.s.setModel(c.seq, c.model)
		}
		if c.play(f) {
			return
		}
	}
	if !c.authorize() {
		return
	}
	switch c.route.op {
	case opChat:
		c.chat()
	case opEmbeddings:
		c.embeddings()
	case opResponses:
		c.responses()
	case opModels:
		c.listModels()
	case opMessages:
		c.messages()
	case opInvoke, opInvokeStream:
		c.invoke()
	case opGenerate, opStreamGenerate:
		c.generate()
	case opBatchEmbed:
		c.batchEmbed()
	}
}

// peekModel returns the body's "model" when it is a JSON object with a
// string model, so that answers played before the body is validated (faults)
// still name it; anything else gives "".
func peekModel(body []byte) string {
	var v struct {
		Model json.RawMessage `json:"model"`
	}
	var m string
	if json.Unmarshal(body, &v) != nil || json.Unmarshal(v.Model, &m) != nil {
		return ""
	}
	return m
}

// admit takes in and out tokens from the buckets, answering 429 when they
// refuse.
func (c *call) admit(in, out int) bool {
	c.s.mu.Lock()
	now := c.s.now()
	ok, dim, wait := c.s.limiter.take(now, in, out)
	var v dimView
	if !ok {
		v = c.s.limiter.view(now)[dim]
	}
	c.s.mu.Unlock()
	if ok {
		return true
	}
	h := c.w.Header()
	if c.route.flavor.sendsRetryAfter() {
		h.Set("retry-after", retryAfterSeconds(wait))
	}
	if c.route.flavor == FlavorOpenAI || c.route.flavor == FlavorAzure {
		h.Set("retry-after-ms", retryAfterMillis(wait))
	}
	requested := [numDims]int{1, in, out}[dim]
	c.fail(apiErr{kind: eRateLimit, dim: dim, wait: wait, limit: v.limit, used: v.limit - v.remaining, requested: requested, fromBucket: true})
	return false
}

// writeHead sets the headers every answer carries (request IDs and the
// flavor's rate-limit headers) and writes the status line.
func (c *call) writeHead(status int, contentType string) {
	h := c.w.Header()
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	switch c.route.flavor {
	case FlavorOpenAI:
		h.Set("x-request-id", c.reqID)
		h.Set("openai-version", "2020-10-01")
		h.Set("openai-organization", "org-fakeprovider")
	case FlavorAzure:
		h.Set("x-request-id", c.reqID)
		h.Set("apim-request-id", c.reqID)
		h.Set("x-ms-region", "Fake Region")
	case FlavorAnthropic:
		h.Set("request-id", c.reqID)
		h.Set("anthropic-organization-id", "00000000-0000-0000-0000-000000000000")
	case FlavorBedrock:
		h.Set("x-amzn-RequestId", c.reqID)
	}
	c.s.mu.Lock()
	now := c.s.now()
	v := c.s.limiter.view(now)
	c.s.mu.Unlock()
	switch c.route.flavor {
	case FlavorOpenAI, FlavorAzure:
		setOpenAIRateHeaders(h, v)
	case FlavorAnthropic:
		setAnthropicRateHeaders(h, v, now)
	}
	c.headerSent = true
	c.w.WriteHeader(status)
}

// flush sends what is buffered.
func (c *call) flush() {
	if f, ok := c.w.(http.Flusher); ok {
		f.Flush()
	}
}

// sleep waits d (forever when d is negative) and reports whether the wait
// ran out. When the client goes away or the server closes first, it closes
// the connection (so that net/http never completes the answer with an
// implicit 200) and returns false; the caller must then stop.
func (c *call) sleep(d time.Duration) bool {
	if d == 0 {
		return true
	}
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-timeout:
		return true
	case <-c.r.Context().Done():
	case <-c.s.done:
	}
	c.cut()
	return false
}

// hijack takes the connection away from net/http, after sending what is
// buffered when the status line was written. When the writer cannot be
// hijacked (HTTP/2, a test recorder) it aborts the handler instead, which
// also breaks the answer.
func (c *call) hijack() net.Conn {
	if c.headerSent {
		c.flush()
	}
	hj, ok := c.w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	return conn
}

// reset closes the connection with a TCP RST: SO_LINGER 0 makes the close
// discard unsent data and reset.
func (c *call) reset() {
	conn := c.hijack()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// cut closes the connection after what was written, without ending the
// body, so the client sees an unexpected EOF.
func (c *call) cut() {
	_ = c.hijack().Close()
}

// cutNow counts one stream event about to be sent and reports whether the
// scripted cut falls before it; the caller then calls cut and stops.
func (c *call) cutNow() bool {
	if c.cutAfter >= 0 && c.events >= c.cutAfter {
		return true
	}
	c.events++
	return false
}

// authorize checks the flavor's credentials and answers when they fail.
func (c *call) authorize() bool {
	r := c.r
	want := c.set.apiKey
	switch c.route.flavor {
	case FlavorOpenAI:
		tok, ok := bearer(r)
		if !ok {
			c.fail(apiErr{kind: eUnauthorized, msg: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys.", code: "-"})
			return false
		}
		if want != "" && tok != want {
			c.fail(apiErr{kind: eUnauthorized, msg: "Incorrect API key provided: " + redact(tok) + ". You can find your API key at https://platform.openai.com/account/api-keys."})
			return false
		}
	case FlavorAzure:
		key := r.Header.Get("api-key")
		if key == "" {
			key, _ = bearer(r)
		}
		if key == "" || (want != "" && key != want) {
			c.fail(apiErr{kind: eUnauthorized})
			return false
		}
	case FlavorAnthropic:
		key := r.Header.Get("x-api-key")
		if key == "" {
			key, _ = bearer(r)
		}
		if key == "" {
			c.fail(apiErr{kind: eUnauthorized, msg: "x-api-key header is required"})
			return false
		}
		if want != "" && key != want {
			c.fail(apiErr{kind: eUnauthorized})
			return false
		}
		if r.Header.Get("anthropic-version") == "" {
			c.fail(apiErr{kind: eBadRequest, msg: "anthropic-version: header is required"})
			return false
		}
	case FlavorBedrock:
		return c.authorizeAWS()
	case FlavorGemini:
		return c.authorizeGeminiKey()
	case FlavorVertex:
		return c.authorizeVertexToken()
	}
	return true
}

// google reports whether f is one of Google's formats.
func (f Flavor) google() bool { return f == FlavorGemini || f == FlavorVertex }

// sendsRetryAfter reports whether the flavor's 429s carry a retry-after
// header: Bedrock's carry none, Google's name the wait in the body.
func (f Flavor) sendsRetryAfter() bool {
	switch f {
	case FlavorBedrock, FlavorGemini, FlavorVertex:
		return false
	}
	return true
}

// bearer returns the token of an "Authorization: Bearer" header.
func bearer(r *http.Request) (string, bool) {
	a := r.Header.Get("Authorization")
	if len(a) < 7 || !strings.EqualFold(a[:7], "bearer ") {
		return "", false
	}
	tok := strings.TrimSpace(a[7:])
	return tok, tok != ""
}

// redact shows a key the way OpenAI's 401 does: its start and its last four
// characters.
func redact(key string) string {
	if len(key) <= 8 {
		return strings.Repeat("*", len(key))
	}
	return key[:3] + strings.Repeat("*", len(key)-7) + key[len(key)-4:]
}

// newID returns prefix followed by 24 random hex digits.
func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	if prefix == "" {
		prefix = "req_"
	}
	return prefix + hex.EncodeToString(b[:])
}
