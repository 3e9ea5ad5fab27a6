// Package translated is the adapter for a call whose caller speaks another
// format than the member (ROUTING.md R-FMT-2): it turns the caller's body
// into the member's format with package translate, lets the member's own
// adapter address and build the upstream request, and translates the
// member's answer back, whole or event by event.
//
// Every attempt builds its request again from the caller's original body
// (R-FMT-4), so nothing of one member's format leaks into the next.
package translated

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"weir.dev/edge/internal/translate"
	"weir.dev/edge/internal/wire"
	"weir.dev/edge/internal/wire/bedrock"
	"weir.dev/routing"
)

// maxAnswer bounds a whole (non-streamed) answer the adapter reads to
// translate: it must hold the answer to rewrite it. Larger answers are
// refused as cut.
const maxAnswer = 32 << 20

// Adapter translates between a caller endpoint and a member wire format.
// Native is the member format's own adapter, which builds the URL and
// headers of the upstream request from a body already in its format.
type Adapter struct {
	Wire   routing.WireFormat
	Native wire.Adapter
}

var _ wire.Adapter = Adapter{}

// nativeEndpoint is the endpoint a body in wire format w is addressed to
// by w's adapter.
func nativeEndpoint(w routing.WireFormat, caller routing.Endpoint) routing.Endpoint {
	switch {
	case caller == routing.EndpointEmbeddings:
		return routing.EndpointEmbeddings
	case w == routing.WireAnthropic || w == routing.WireBedrock:
		return routing.EndpointMessages
	}
	return routing.EndpointChatCompletions
}

// Parse reads a caller's chat body into the neutral form.
func Parse(ep routing.Endpoint, body []byte) (*translate.Request, error) {
	switch ep {
	case routing.EndpointChatCompletions:
		return translate.ParseChat(body)
	case routing.EndpointResponses:
		return translate.ParseResponses(body)
	case routing.EndpointMessages:
		return translate.ParseMessages(body)
	}
	return nil, fmt.Errorf("translated: endpoint %v is not a chat endpoint", ep)
}

// render writes the neutral request in member format w. Bedrock takes the
// Anthropic body; its own adapter makes the Bedrock changes (R-FMT-1).
func render(w routing.WireFormat, r *translate.Request, model string, defaultMax int64) ([]byte, error) {
	switch w {
	case routing.WireOpenAI:
		return translate.RenderOpenAI(r, model)
	case routing.WireAnthropic, routing.WireBedrock:
		return translate.RenderAnthropic(r, model, defaultMax)
	case routing.WireGemini:
		return translate.RenderGemini(r)
	}
	return nil, fmt.Errorf("translated: no translation to wire format %v", w)
}

// Build implements wire.Adapter: the caller's body in the member's format,
// sent by the member format's adapter. A body that cannot be translated is
// a *translate.BadRequest (the gateway answers 400).
func (a Adapter) Build(ctx context.Context, req *wire.Request, m *routing.Member, model string) (*http.Request, error) {
	var body []byte
	var err error
	if req.Endpoint == routing.EndpointEmbeddings {
		body, err = translate.RenderGeminiEmbed(req.Body, model)
	} else {
		var r *translate.Request
		if r, err = Parse(req.Endpoint, req.Body); err == nil {
			body, err = render(a.Wire, r, model, m.Record.DefaultMaxOutput)
		}
	}
	if err != nil {
		return nil, err
	}
	native := &wire.Request{
		Endpoint: nativeEndpoint(a.Wire, req.Endpoint),
		Body:     body,
		// The caller's own headers are for its format; the member's
		// adapter takes none of them across formats.
		Header:       http.Header{},
		Model:        model,
		Stream:       req.Stream,
		MaxOutput:    req.MaxOutput,
		IncludeUsage: true,
	}
	return a.Native.Build(ctx, native, m, model)
}

// Relay implements wire.Adapter: the member's answer in the caller's
// format. A whole answer is read (up to maxAnswer), translated, completed
// and written; a stream is translated event by event, each caller event
// flushed as the member's arrives, with out.Complete called when the
// member's stream ends and before the caller's terminal event is written.
func (a Adapter) Relay(req *wire.Request, resp *http.Response, out wire.Out) (routing.Usage, error) {
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") ||
		strings.HasPrefix(resp.Header.Get("Content-Type"), "application/vnd.amazon.eventstream")
	if !req.Stream || !sse {
		return a.relayWhole(req, resp, out)
	}
	wire.StartFrom(out, resp.StatusCode, resp.Header, true)
	// The answer's time is now: no member's stream carries OpenAI's created.
	s := &stream{dec: translate.NewDecoder(a.Wire), enc: translate.NewEncoderAt(req.Endpoint, req.Model, req.IncludeUsage, time.Now().Unix()), out: out}
	var err error
	if a.Wire == routing.WireBedrock {
		err = bedrock.Chunks(resp.Body, func(typ string, data []byte) error { return s.event(typ, data, true) })
	} else {
		rd := wire.NewSSEReader(resp.Body)
		defer rd.Release() // each event was translated as it came, none is kept
		for err == nil {
			var ev wire.Event
			if ev, err = rd.Next(); err == nil {
				err = s.event(ev.Name, ev.Data, !rd.Buffered())
			}
		}
		if errors.Is(err, io.EOF) {
			err = nil
		}
	}
	if err == nil && !s.done {
		err = io.ErrUnexpectedEOF // cut before its end (R-FAIL-11)
	}
	return s.enc.Usage(), err
}

// stream carries one translated stream.
type stream struct {
	dec  translate.Decoder
	enc  translate.Encoder
	out  wire.Out
	done bool
}

// event translates one member event and writes what it gives the caller,
// flushing when flush says no more member events are waiting.
func (s *stream) event(name string, data []byte, flush bool) error {
	if s.done {
		return nil // nothing follows the end
	}
	err := s.dec.Decode(name, data, func(ev translate.Event) error {
		if ev.Kind == translate.EventDone {
			s.done = true
			s.out.Complete(s.enc.Usage())
		}
		return s.enc.Encode(ev, s.out)
	})
	if err != nil {
		return err
	}
	if flush {
		s.out.Flush()
	}
	return nil
}

// relayWhole reads a whole answer, translates it, completes and writes it.
func (a Adapter) relayWhole(req *wire.Request, resp *http.Response, out wire.Out) (routing.Usage, error) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return routing.Usage{}, err
	}
	if len(body) > maxAnswer {
		return routing.Usage{}, errors.New("translated: answer too large to translate")
	}
	var outBody []byte
	var u routing.Usage
	if req.Endpoint == routing.EndpointEmbeddings {
		b64, inputs := translate.EmbedShape(req.Body)
		outBody, u, err = translate.EncodeGeminiEmbed(body, req.Model, b64, inputs)
	} else {
		var ans *translate.Answer
		if ans, err = translate.DecodeAnswer(a.Wire, body); err == nil {
			u = ans.Usage
			if ans.Created == 0 { // Anthropic and Gemini answers carry no time
				ans.Created = time.Now().Unix()
			}
			outBody, err = translate.EncodeAnswer(req.Endpoint, ans, req.Model)
		}
	}
	if err != nil {
		return routing.Usage{}, fmt.Errorf("translated: answer: %w", err)
	}
	h := http.Header{}
	wire.CopyPassHeaders(h, resp.Header)
	h.Set("Content-Type", "application/json")
	out.Complete(u)
	out.Start(resp.StatusCode, h)
	_, err = out.Write(outBody)
	return u, err
}
