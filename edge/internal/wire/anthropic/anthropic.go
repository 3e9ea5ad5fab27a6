// Package anthropic is the adapter for the anthropic wire format: the
// Anthropic Messages API.
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"weir.dev/edge/internal/wire"
	"weir.dev/routing"
)

// DefaultVersion is sent as anthropic-version when the caller sends none.
const DefaultVersion = "2023-06-01"

// Adapter implements wire.Adapter for the anthropic wire format.
type Adapter struct{}

var _ wire.Adapter = Adapter{}

// Build implements wire.Adapter: POST <base>/v1/messages, where base is the
// API root as the Anthropic SDKs take it (https://api.anthropic.com). The
// caller's anthropic-version and anthropic-beta headers are passed through.
func (Adapter) Build(ctx context.Context, req *wire.Request, m *routing.Member, model string) (*http.Request, error) {
	body := req.Body
	if model != req.Model {
		q, _ := json.Marshal(model)
		var err error
		if body, err = wire.EditTop(req.Body, wire.Edit{Key: "model", Raw: q}); err != nil {
			return nil, err
		}
	}
	u := strings.TrimRight(m.BaseURL, "/") + "/v1/messages"
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	r.Header.Set("Content-Type", "application/json")
	v := req.Header.Get("Anthropic-Version")
	if v == "" {
		v = DefaultVersion
	}
	r.Header.Set("Anthropic-Version", v)
	for _, b := range req.Header.Values("Anthropic-Beta") {
		r.Header.Add("Anthropic-Beta", b)
	}
	if req.Stream {
		r.Header.Set("Accept", "text/event-stream")
	}
	return r, nil
}

// Relay implements wire.Adapter.
func (Adapter) Relay(req *wire.Request, resp *http.Response, out wire.Out) (routing.Usage, error) {
	if !req.Stream || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return wire.RelayBody(resp, out, wire.AnthropicBodyUsage)
	}
	wire.StartFrom(out, resp.StatusCode, resp.Header, true)
	rd := wire.NewSSEReader(resp.Body)
	defer rd.Release() // every event was written out, none is kept
	return RelaySSE(rd, out)
}

// RelaySSE copies Messages stream events to out, flushing each, and folds
// their usage (message_start, message_delta). It calls out.Complete when
// message_stop is read, before writing it. A stream that ends before
// message_stop is reported as cut (io.ErrUnexpectedEOF).
func RelaySSE(rd *wire.SSEReader, out wire.Out) (routing.Usage, error) {
	var usage routing.Usage
	stopped := false
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			if !stopped {
				// A stream that ends before message_stop was cut (R-FAIL-11).
				return usage, io.ErrUnexpectedEOF
			}
			return usage, nil
		}
		if err != nil {
			return usage, err
		}
		wire.AnthropicStreamUsage(&usage, ev.Name, ev.Data)
		if !stopped && ev.Name == "message_stop" {
			// The usage came before (message_start, message_delta): the
			// answer is complete before the caller sees its end.
			stopped = true
			out.Complete(usage)
		}
		if _, err := out.Write(ev.Raw); err != nil {
			return usage, err
		}
		if !rd.Buffered() {
			out.Flush() // every event reaches the caller as it arrives
		}
	}
}
