package fakeprovider

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// BedrockAnthropicVersion is the anthropic_version Bedrock documents for the
// body of Anthropic models. The server requires the field but takes any
// non-empty value.
const BedrockAnthropicVersion = "bedrock-2023-05-31"

// invoke answers InvokeModel and InvokeModelWithResponseStream for an
// Anthropic model: the body is Anthropic's, without model and stream, and
// with anthropic_version.
func (c *call) invoke() {
	var req messagesRequest
	if !c.decodeBody(&req) {
		return
	}
	c.s.setModel(c.seq, c.model)
	switch {
	case req.AnthropicVersion == nil:
		c.badRequest("", "#: required key [anthropic_version] not found")
	case *req.AnthropicVersion == "":
		// Any version is taken: the official SDKs send either
		// BedrockAnthropicVersion or their first-party version here.
		c.badRequest("", "#/anthropic_version: expected minLength: 1, actual: 0")
	case req.Model != nil:
		c.badRequest("", "#: extraneous key [model] is not permitted")
	case req.Stream != nil:
		c.badRequest("", "#: extraneous key [stream] is not permitted")
	case req.MaxTokens == nil:
		c.badRequest("", "#: required key [max_tokens] not found")
	case *req.MaxTokens < 1:
		c.badRequest("", "#/max_tokens: 0 is not greater or equal to 1")
	case len(bytes.TrimSpace(req.Messages)) == 0 || string(req.Messages) == "null":
		c.badRequest("", "#: required key [messages] not found")
	case !bytes.HasPrefix(bytes.TrimSpace(req.Messages), []byte("[")):
		c.badRequest("", "#/messages: expected type: JSONArray, found: JSONObject")
	default:
		c.answerMessages(&req, c.route.op == opInvokeStream, &frameEmitter{c: c, enc: eventstream.NewEncoder()})
	}
}

// startEventStream writes the status line of an AWS event stream.
func (c *call) startEventStream() {
	c.w.Header().Set("X-Amzn-Bedrock-Content-Type", "application/json")
	c.writeHead(http.StatusOK, "application/vnd.amazon.eventstream")
	c.flush()
}

// frameEmitter sends Anthropic events as Bedrock's event-stream frames:
// a "chunk" event whose JSON payload carries the event, base64-encoded, in
// "bytes" and some padding in "p", as Bedrock does to hide lengths.
type frameEmitter struct {
	c   *call
	enc *eventstream.Encoder
	buf bytes.Buffer
}

// padding is what Bedrock's "p" field holds, cut to a length.
const padding = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// emit sends data as one frame, flushed.
func (e *frameEmitter) emit(_ string, data []byte) bool {
	c := e.c
	if c.cutNow() {
		c.cut()
		return false
	}
	payload := mustJSON(struct {
		Bytes string `json:"bytes"`
		P     string `json:"p"`
	}{base64.StdEncoding.EncodeToString(data), padding[:len(data)%len(padding)]})
	e.buf.Reset()
	err := e.enc.Encode(&e.buf, eventstream.Message{
		Headers: eventstream.Headers{
			{Name: ":event-type", Value: eventstream.StringValue("chunk")},
			{Name: ":content-type", Value: eventstream.StringValue("application/json")},
			{Name: ":message-type", Value: eventstream.StringValue("event")},
		},
		Payload: payload,
	})
	if err != nil {
		return false
	}
	if _, err := c.w.Write(e.buf.Bytes()); err != nil {
		return false
	}
	c.flush()
	return true
}

// sigV4 is a parsed "AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…,
// Signature=…" header.
type sigV4 struct {
	accessKey, date, region, service string
	signedHeaders                    []string
	signature                        string
}

// parseSigV4 reads an Authorization header; ok is false when it is not a
// complete SigV4 header.
func parseSigV4(h string) (sigV4, bool) {
	rest, ok := strings.CutPrefix(h, "AWS4-HMAC-SHA256 ")
	if !ok {
		return sigV4{}, false
	}
	var s sigV4
	var cred, signed string
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			cred = v
		case "SignedHeaders":
			signed = v
		case "Signature":
			s.signature = v
		}
	}
	scope := strings.Split(cred, "/")
	if len(scope) != 5 || scope[4] != "aws4_request" || signed == "" || s.signature == "" {
		return sigV4{}, false
	}
	s.accessKey, s.date, s.region, s.service = scope[0], scope[1], scope[2], scope[3]
	s.signedHeaders = strings.Split(signed, ";")
	return s, true
}

// authorizeAWS accepts a Bedrock API key (Bearer) or a SigV4 signature,
// verifying the signature when the server knows the secret.
func (c *call) authorizeAWS() bool {
	r := c.r
	auth := r.Header.Get("Authorization")
	if tok, ok := bearer(r); ok {
		if c.set.apiKey != "" && tok != c.set.apiKey {
			c.fail(apiErr{kind: eUnauthorized})
			return false
		}
		return true
	}
	if auth == "" {
		c.fail(apiErr{kind: eUnauthorized, code: "MissingAuthenticationTokenException", msg: "Missing Authentication Token"})
		return false
	}
	sig, ok := parseSigV4(auth)
	if !ok {
		c.fail(apiErr{kind: eUnauthorized, code: "IncompleteSignatureException", msg: "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters."})
		return false
	}
	if sig.service != "bedrock" {
		c.fail(apiErr{kind: eUnauthorized, code: "InvalidSignatureException", msg: "Credential should be scoped to correct service: 'bedrock'."})
		return false
	}
	if c.set.awsSecret == "" {
		return true
	}
	if err := verifySigV4(r, c.body, sig, c.set.awsSecret); err != nil {
		c.fail(apiErr{kind: eUnauthorized, code: "InvalidSignatureException", msg: "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."})
		return false
	}
	return true
}

// verifySigV4 signs a copy of r that holds only the headers r says it
// signed, with secret and r's own time and scope, and compares signatures.
func verifySigV4(r *http.Request, body []byte, sig sigV4, secret string) error {
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return errors.New("no valid X-Amz-Date")
	}
	u := *r.URL
	u.Scheme, u.Host = "http", r.Host
	cp := &http.Request{Method: r.Method, URL: &u, Host: r.Host, Header: http.Header{}}
	for _, name := range sig.signedHeaders {
		switch name {
		case "host":
		case "content-length":
			cp.ContentLength = int64(len(body))
		default:
			cp.Header[http.CanonicalHeaderKey(name)] = r.Header.Values(name)
		}
	}
	hash := r.Header.Get("X-Amz-Content-Sha256")
	if hash == "" {
		sum := sha256.Sum256(body)
		hash = hex.EncodeToString(sum[:])
	}
	creds := aws.Credentials{AccessKeyID: sig.accessKey, SecretAccessKey: secret, SessionToken: r.Header.Get("X-Amz-Security-Token")}
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, cp, hash, sig.service, sig.region, when); err != nil {
		return err
	}
	got, ok := parseSigV4(cp.Header.Get("Authorization"))
	if !ok || !hmac.Equal([]byte(got.signature), []byte(sig.signature)) {
		return errors.New("signature mismatch")
	}
	return nil
}
