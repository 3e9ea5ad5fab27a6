package wire

import (
	"context"
	"net/http"

	"weir.dev/routing"
)

// Request is a caller's request as the edge read it. The body is held whole
// so it can be sent again on failover; only the fields routing needs were
// decoded from it.
type Request struct {
	Endpoint routing.Endpoint
	Body     []byte
	Header   http.Header
	Model    string
	Stream   bool
	// MaxOutput is the request's output cap, 0 when it names none.
	MaxOutput      int64
	PromptCacheKey string
	UserID         string
	// IncludeUsage is the caller's own stream_options.include_usage. The
	// OpenAI adapter always asks the provider for usage and drops the
	// usage-only chunk when the caller did not ask for it.
	IncludeUsage bool
	// Features are the shape-changing features the body asks for
	// (R-FMT-3).
	Features routing.Features
}

// Out is where an adapter writes a successful answer to the caller.
type Out interface {
	// Start sends the status line and headers (the gateway adds its own).
	// It is the point of no return only once content is written.
	Start(status int, h http.Header)
	// Write sends content bytes.
	Write(p []byte) (int, error)
	// Flush pushes what was written to the caller now (one SSE event).
	Flush()
	// Complete reports that the provider's answer is complete and u is its
	// final usage. Relay calls it exactly once per successful relay, when
	// the answer's end is known but before the caller can hold a complete
	// answer: a stream's terminal event (OpenAI chat's "data: [DONE]", a
	// Responses API terminal event, Anthropic's message_stop, Bedrock's
	// message_stop chunk) is read and its usage folded, but neither it nor
	// anything after it is written yet; a non-streamed answer is read (or,
	// when streamed through, everything but its last bytes is written, see
	// RelayBody). The gateway writes the call's record there, so that every
	// answer a caller can take as complete is already recorded (DESIGN.md
	// §1.3, exactly once). A relay that fails before it (a cut stream) does
	// not call it.
	Complete(u routing.Usage)
}

// Adapter speaks one upstream wire format. Auth is not its business: the
// gateway signs the request Build returns.
type Adapter interface {
	// Build returns the upstream request of one attempt to member m, sending
	// model (the member's name for the caller's model). The caller's body is
	// kept except what the wire format needs changed.
	Build(ctx context.Context, req *Request, m *routing.Member, model string) (*http.Request, error)
	// Relay copies a successful (2xx) answer to the caller, flushing each
	// streamed event as it arrives, calls out.Complete once the answer's
	// end is known and before it is written, and returns the usage the
	// provider reported. An error after content was written and before
	// Complete means the stream was cut (R-FAIL-11); the gateway then ends
	// it with an error event. An error after Complete (the caller went away
	// during the terminal event, the connection failed after it) does not
	// undo the answer.
	Relay(req *Request, resp *http.Response, out Out) (routing.Usage, error)
}

// SetRequestHeaders sets an upstream request's JSON Content-Type, and its
// Accept: text/event-stream for a streamed answer, else application/json.
// The values are shared by every request and must not be changed in place
// (Set, Add and Del replace them, which is fine).
func SetRequestHeaders(h http.Header, stream bool) {
	h["Content-Type"] = jsonContentType
	if stream {
		h["Accept"] = sseContentType
	} else {
		h["Accept"] = jsonContentType
	}
}

var jsonContentType = []string{"application/json"}[:1:1]

// PassHeaders are upstream response headers the caller gets on a relayed
// answer: the content type and the provider's request ids, which callers
// quote to support. Rate-limit headers are one member's and are not passed.
var PassHeaders = []string{"Content-Type", "X-Request-Id", "Request-Id", "Apim-Request-Id", "X-Amzn-Requestid", "Openai-Processing-Ms"}

// CopyPassHeaders copies PassHeaders from src to dst: the first value of
// each, when not empty. PassHeaders are in canonical form, so the maps are
// indexed directly, and dst shares src's value (capped at one element, so
// an append to either copies): a relayed answer's headers are read, never
// changed in place.
func CopyPassHeaders(dst, src http.Header) {
	for _, k := range PassHeaders {
		if vs := src[k]; len(vs) > 0 && vs[0] != "" {
			dst[k] = vs[:1:1]
		}
	}
}
