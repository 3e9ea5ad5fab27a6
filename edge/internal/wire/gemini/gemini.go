// Package gemini is the adapter for the gemini wire format: the Gemini API
// (generativelanguage.googleapis.com) and Vertex AI's Gemini models
// (DESIGN.md §3, ROUTING.md §11).
//
// No caller speaks Gemini: every call to a gemini member is translated
// (R-FMT-2, R-FMT-7). The translated adapter renders the caller's body in
// Gemini's format and asks this adapter only to address it (Build); it
// reads and relays the member's answers itself, so Relay is never reached
// and refuses.
//
// # Addresses
//
// Both services name a model's methods the same way, as a resource path
// followed by ":method" (Google's REST transcoding):
//
//	Gemini API:  POST https://generativelanguage.googleapis.com/v1beta/models/{model}:generateContent
//	Vertex AI:   POST https://{region}-aiplatform.googleapis.com/v1/projects/{p}/locations/{region}/publishers/google/models/{model}:generateContent
//
// so a member's base URL is everything before "/models/": for the Gemini
// API https://generativelanguage.googleapis.com/v1beta, for Vertex AI
// https://{region}-aiplatform.googleapis.com/v1/projects/{p}/locations/{region}/publishers/google
// (or, for Vertex AI's global endpoint and express mode,
// https://aiplatform.googleapis.com/v1/publishers/google), and Build
// appends "/models/{model}:{method}":
//
//   - chat, not streamed: generateContent;
//   - chat, streamed: streamGenerateContent?alt=sse (server-sent events,
//     one GenerateContentResponse per event; without alt=sse Google streams
//     a JSON array);
//   - embeddings: batchEmbedContents (Gemini API; Vertex AI serves its
//     embedding models through predict, which is not supported here).
//
// Auth is the gateway's (package upauth): x-goog-api-key for the Gemini
// API, a bearer token from a service account for Vertex AI.
package gemini

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"weir.dev/edge/internal/wire"
	"weir.dev/routing"
)

// ErrRelay is Relay's only answer: a gemini member's answer is read and
// relayed by the translated adapter (package translated), which turns it
// into the caller's format; reaching this Relay means the gateway sent a
// call untranslated to a gemini member.
var ErrRelay = errors.New("gemini answers are relayed by translation")

// Adapter implements wire.Adapter for the gemini wire format.
type Adapter struct{}

var _ wire.Adapter = Adapter{}

// Methods of a model, after the ':' of its resource path.
const (
	MethodGenerate       = "generateContent"
	MethodStreamGenerate = "streamGenerateContent?alt=sse"
	MethodBatchEmbed     = "batchEmbedContents"
)

// maxModel bounds the model name put in a URL.
const maxModel = 256

// URL is the upstream URL of method for model below base: base (without
// trailing '/') + "/models/" + model + ":" + method.
//
// model is the member's name for the model. A leading "models/" (how the
// Gemini API lists its models) is dropped, so "models/gemini-x" and
// "gemini-x" address the same model. It may hold further '/'-separated
// parts (a Vertex AI publisher model path below the base); each part is
// path-escaped on its own. A model that is empty, longer than 256 bytes,
// has an empty, "." or ".." part, or holds ':', '?', '#', '%', '\\' or a
// control character is refused: the model must not change which resource
// or method the URL names.
func URL(base, model, method string) (string, error) {
	model = strings.TrimPrefix(model, "models/")
	if model == "" || len(model) > maxModel {
		return "", fmt.Errorf("gemini: model name of %d bytes", len(model))
	}
	parts := strings.Split(model, "/")
	for i, p := range parts {
		if p == "" || p == "." || p == ".." {
			return "", errors.New("gemini: model name with an empty, '.' or '..' path part")
		}
		for j := 0; j < len(p); j++ {
			if c := p[j]; c < 0x20 || c == 0x7f || strings.IndexByte(":?#%\\", c) >= 0 {
				return "", fmt.Errorf("gemini: model name holds %q", c)
			}
		}
		parts[i] = pathEscape(p)
	}
	return strings.TrimRight(base, "/") + "/models/" + strings.Join(parts, "/") + ":" + method, nil
}

// pathEscape escapes one path part: letters, digits and -._~@ stay.
func pathEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~@", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// method is the method a request calls: batchEmbedContents for
// embeddings, else (chat, whichever caller endpoint it came in on)
// streamGenerateContent?alt=sse when streamed and generateContent when not.
func method(req *wire.Request) (string, error) {
	switch req.Endpoint {
	case routing.EndpointEmbeddings:
		return MethodBatchEmbed, nil
	case routing.EndpointChatCompletions, routing.EndpointResponses, routing.EndpointMessages:
		if req.Stream {
			return MethodStreamGenerate, nil
		}
		return MethodGenerate, nil
	}
	return "", fmt.Errorf("gemini: endpoint %v not served", req.Endpoint)
}

// Build implements wire.Adapter: POST URL(m.BaseURL, model, method) with
// req.Body as it is, which must already be a Gemini body (a
// GenerateContentRequest, or a BatchEmbedContentsRequest for embeddings):
// the model goes in the URL, so the body is not edited. Content-Type is
// application/json; Accept is text/event-stream when streamed. No caller
// header is passed on.
func (Adapter) Build(ctx context.Context, req *wire.Request, m *routing.Member, model string) (*http.Request, error) {
	meth, err := method(req)
	if err != nil {
		return nil, err
	}
	u, err := URL(m.BaseURL, model, meth)
	if err != nil {
		return nil, err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(req.Body))
	if err != nil {
		return nil, err
	}
	wire.SetRequestHeaders(r.Header, req.Stream && req.Endpoint != routing.EndpointEmbeddings)
	return r, nil
}

// Relay implements wire.Adapter and always fails with ErrRelay, writing
// nothing to out: the translated adapter relays gemini answers.
func (Adapter) Relay(*wire.Request, *http.Response, wire.Out) (routing.Usage, error) {
	return routing.Usage{}, ErrRelay
}
