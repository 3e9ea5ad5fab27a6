// Package bedrock is the adapter for the bedrock wire format: Anthropic
// models on Amazon Bedrock through InvokeModel and
// InvokeModelWithResponseStream. Bedrock's binary event stream is decoded
// with aws-sdk-go-v2's eventstream package and re-emitted to the caller as
// Anthropic-format Server-Sent Events.
package bedrock

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"weir.dev/edge/internal/wire"
	"weir.dev/routing"
)

// AnthropicVersion is the body field Bedrock requires for Anthropic models.
const AnthropicVersion = "bedrock-2023-05-31"

// Adapter implements wire.Adapter for the bedrock wire format.
type Adapter struct{}

var _ wire.Adapter = Adapter{}

// Build implements wire.Adapter: POST <base>/model/<model id>/invoke, or
// /invoke-with-response-stream when streaming. The model and stream members
// leave the body (Bedrock takes them from the path), anthropic_version is
// added when the caller sent none, and anthropic-beta headers become the
// body's anthropic_beta list, as Bedrock expects.
func (Adapter) Build(ctx context.Context, req *wire.Request, m *routing.Member, model string) (*http.Request, error) {
	edits := []wire.Edit{{Key: "model", Delete: true}, {Key: "stream", Delete: true}}
	var probe struct {
		AnthropicVersion *string `json:"anthropic_version"`
	}
	if err := json.Unmarshal(req.Body, &probe); err != nil {
		return nil, err
	}
	if probe.AnthropicVersion == nil {
		edits = append(edits, wire.Edit{Key: "anthropic_version", Raw: []byte(`"` + AnthropicVersion + `"`)})
	}
	var betas []string
	for _, v := range req.Header.Values("Anthropic-Beta") {
		for _, b := range strings.Split(v, ",") {
			if b = strings.TrimSpace(b); b != "" {
				betas = append(betas, b)
			}
		}
	}
	if len(betas) > 0 {
		raw, _ := json.Marshal(betas)
		edits = append(edits, wire.Edit{Key: "anthropic_beta", Raw: raw})
	}
	body, err := wire.EditTop(req.Body, edits...)
	if err != nil {
		return nil, err
	}
	action := "/invoke"
	accept := "application/json"
	if req.Stream {
		action = "/invoke-with-response-stream"
		accept = "application/vnd.amazon.eventstream"
	}
	u := strings.TrimRight(m.BaseURL, "/") + "/model/" + url.PathEscape(model) + action
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", accept)
	return r, nil
}

// Relay implements wire.Adapter.
func (Adapter) Relay(req *wire.Request, resp *http.Response, out wire.Out) (routing.Usage, error) {
	if !req.Stream {
		return wire.RelayBody(resp, out, wire.AnthropicBodyUsage)
	}
	wire.StartFrom(out, resp.StatusCode, resp.Header, true)
	return RelayEventStream(resp.Body, out)
}

// StreamError is an exception Bedrock sent inside the event stream.
type StreamError struct {
	Type    string
	Message string
}

func (e *StreamError) Error() string { return "bedrock stream: " + e.Type + ": " + e.Message }

// maxFrame bounds one event-stream frame's payload.
const maxFrame = 4 << 20

// RelayEventStream decodes Bedrock's event stream from r and writes each
// chunk to out as an Anthropic SSE event ("event: <type>\ndata: <json>"),
// flushing each. It calls out.Complete when the message_stop chunk is
// decoded, before writing it. An exception frame ends the relay with a
// *StreamError.
func RelayEventStream(r io.Reader, out wire.Out) (routing.Usage, error) {
	var usage routing.Usage
	var line []byte
	stopped := false
	err := Chunks(r, func(typ string, data []byte) error {
		wire.AnthropicStreamUsage(&usage, typ, data)
		if !stopped && typ == "message_stop" {
			// The answer is complete before the caller sees its end.
			stopped = true
			out.Complete(usage)
		}
		line = append(line[:0], "event: "...)
		line = append(line, typ...)
		line = append(line, "\ndata: "...)
		line = append(line, bytes.TrimSpace(data)...)
		line = append(line, '\n', '\n')
		if _, err := out.Write(line); err != nil {
			return err
		}
		out.Flush()
		return nil
	})
	if err == nil && !stopped {
		// A stream that ends before message_stop was cut (R-FAIL-11).
		err = io.ErrUnexpectedEOF
	}
	return usage, err
}

// Chunks decodes Bedrock's event stream from r and calls fn with each
// chunk's Anthropic stream event: its type ("message_start", …) and its
// JSON. Chunks without a type are skipped. It returns nil at the end of
// the stream, fn's first error, a *StreamError for an exception frame, or
// a decoding error (io.ErrUnexpectedEOF for a frame cut short). Whether
// the stream ended where it should (at message_stop) is the caller's to
// judge.
func Chunks(r io.Reader, fn func(typ string, data []byte) error) error {
	dec := eventstream.NewDecoder()
	buf := make([]byte, 0, 16<<10)
	for {
		msg, err := dec.Decode(r, buf)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return err
			}
			return fmt.Errorf("bedrock event stream: %w", err)
		}
		if len(msg.Payload) > maxFrame {
			return errors.New("bedrock event stream: frame too large")
		}
		typ, data, err := readChunk(msg)
		if err != nil {
			return err
		}
		if typ == "" {
			continue
		}
		if err := fn(typ, data); err != nil {
			return err
		}
	}
}

// readChunk reads one frame: the Anthropic event of a "chunk" frame, nothing
// ("") for other event frames, a *StreamError for an exception.
func readChunk(msg eventstream.Message) (string, []byte, error) {
	switch header(msg, ":message-type") {
	case "exception", "error":
		var body struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(msg.Payload, &body)
		t := header(msg, ":exception-type")
		if t == "" {
			t = header(msg, ":error-code")
		}
		return "", nil, &StreamError{Type: t, Message: body.Message}
	}
	if header(msg, ":event-type") != "chunk" {
		return "", nil, nil
	}
	var c struct {
		Bytes string `json:"bytes"`
	}
	if err := json.Unmarshal(msg.Payload, &c); err != nil {
		return "", nil, fmt.Errorf("bedrock event stream: chunk: %w", err)
	}
	data, err := base64.StdEncoding.DecodeString(c.Bytes)
	if err != nil {
		return "", nil, fmt.Errorf("bedrock event stream: chunk bytes: %w", err)
	}
	var ev struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(data, &ev) != nil || ev.Type == "" {
		return "", nil, nil
	}
	return ev.Type, data, nil
}

func header(m eventstream.Message, name string) string {
	v := m.Headers.Get(name)
	if v == nil {
		return ""
	}
	return v.String()
}
