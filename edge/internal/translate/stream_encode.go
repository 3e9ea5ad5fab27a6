package translate

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"weir.dev/routing"
)

// Encoder writes a streamed answer in the caller's format, one neutral
// Event at a time (R-FMT-2).
//
// Encode writes what ev makes in the caller's format to w at once, in one
// Write, holding back nothing of what can already be said (the adapter
// flushes after each member event). Two things wait for EventDone because
// the caller's format puts the final usage in them: Anthropic's
// message_delta and the Responses API's response.completed /
// response.incomplete. The caller's terminal event ("data: [DONE]",
// response.completed / response.incomplete, message_stop) is written for
// EventDone only, so a stream cut before it stays visibly cut (R-FAIL-11).
//
// Encode is robust to an Event sequence no Decoder makes: the opening is
// made up at the first event when no EventStart came; parts still open at
// EventFinish are closed first; a finish is made up at EventDone when none
// came; pieces for a part never opened, of the wrong kind or already
// closed, and every event after EventDone, are ignored. Whatever the
// sequence, the bytes written are a valid stream for the caller's SDK.
//
// Usage returns the usage known so far in Weir's terms (the running totals
// carried by EventStart, EventFinish, EventUsage and EventDone: a count
// given again replaces the earlier one).
//
// An Encoder is for one stream and is not safe for concurrent use.
type Encoder interface {
	Encode(ev Event, w io.Writer) error
	Usage() routing.Usage
}

// NewEncoder returns an Encoder writing caller endpoint ep's stream format,
// naming model (the caller's model name) as the answering model.
// includeUsage is the Chat Completions caller's
// stream_options.include_usage: the usage chunk is written only then (the
// other formats always carry usage). An endpoint with no chat stream gets
// an Encoder that fails on every event.
func NewEncoder(ep routing.Endpoint, model string, includeUsage bool) Encoder {
	return NewEncoderAt(ep, model, includeUsage, 0)
}

// NewEncoderAt is NewEncoder writing created (Unix seconds) as the
// answer's time where the caller's format has one (Chat Completions'
// created, the Responses API's created_at): the gateway gives the time the
// call began, as the member's own stream may carry none.
func NewEncoderAt(ep routing.Endpoint, model string, includeUsage bool, created int64) Encoder {
	e := &streamEncoder{model: model, parts: map[int]*encPart{}, created: created}
	switch ep {
	case routing.EndpointChatCompletions:
		e.f = &chatStreamFormat{includeUsage: includeUsage}
	case routing.EndpointResponses:
		e.f = &responsesStreamFormat{}
		e.keep = true
	case routing.EndpointMessages:
		e.f = &messagesStreamFormat{}
	default:
		return failingEncoder{ep}
	}
	return e
}

type failingEncoder struct{ ep routing.Endpoint }

func (e failingEncoder) Encode(Event, io.Writer) error {
	return fmt.Errorf("translate: no stream encoder for endpoint %v", e.ep)
}
func (failingEncoder) Usage() routing.Usage { return routing.Usage{} }

// maxKept bounds the text and arguments an Encoder keeps to repeat at the
// end (the Responses API repeats the whole answer in response.completed):
// a member streaming without end cannot grow it without bound.
const maxKept = 32 << 20

var errAnswerTooLarge = errors.New("translate: streamed answer too large to translate")

// encPart is one part of the caller's stream.
type encPart struct {
	n      int // the caller's index: parts in the order they opened
	tool   bool
	toolN  int // the caller's index among tool calls only
	id     string
	name   string
	itemID string // Responses: the output item's id
	kept   strings.Builder
	stop   bool
}

// streamFormat writes one caller format; each method appends to b.
type streamFormat interface {
	start(e *streamEncoder, b []byte) []byte
	open(e *streamEncoder, b []byte, p *encPart, first string) []byte
	piece(e *streamEncoder, b []byte, p *encPart, s string) []byte
	stop(e *streamEncoder, b []byte, p *encPart) []byte
	finish(e *streamEncoder, b []byte) []byte
	done(e *streamEncoder, b []byte) []byte
}

// streamEncoder is the state every caller format shares; f writes the
// bytes.
type streamEncoder struct {
	f     streamFormat
	model string
	// created is the answer's time in Unix seconds (NewEncoderAt).
	created int64
	id      string // the member's id without its format's prefix
	keep    bool   // keep the parts' text (Responses)
	kept    int
	usage   routing.Usage
	parts   map[int]*encPart
	order   []*encPart
	tools   int
	finish  Finish
	seq     string

	started, finished, done bool
	buf                     []byte
}

func (e *streamEncoder) Usage() routing.Usage { return e.usage }

func (e *streamEncoder) Encode(ev Event, w io.Writer) error {
	if e.done {
		return nil
	}
	streamMergeUsage(&e.usage, ev.Usage)
	b := e.buf[:0]
	if !e.started {
		e.started = true
		e.id = streamBaseID(ev.ID)
		b = e.f.start(e, b)
	}
	switch ev.Kind {
	case EventText, EventToolCall, EventToolArgs:
		if e.finished {
			break
		}
		p := e.parts[ev.Index]
		switch {
		case p == nil && ev.Kind == EventText:
			p = e.openPart(ev.Index, false, "", "")
			b = e.f.open(e, b, p, ev.Text)
			if err := e.keepText(p, ev.Text); err != nil {
				return err
			}
		case p == nil && ev.Kind == EventToolCall:
			p = e.openPart(ev.Index, true, ev.ToolCallID, ev.ToolName)
			b = e.f.open(e, b, p, "")
		case p == nil || p.stop || ev.Kind == EventToolCall || p.tool != (ev.Kind == EventToolArgs) || ev.Text == "":
			// not a piece of an open part of its kind
		default:
			if err := e.keepText(p, ev.Text); err != nil {
				return err
			}
			b = e.f.piece(e, b, p, ev.Text)
		}
	case EventPartStop:
		if p := e.parts[ev.Index]; p != nil && !p.stop && !e.finished {
			p.stop = true
			b = e.f.stop(e, b, p)
		}
	case EventFinish:
		b = e.end(b, ev.Finish, ev.StopSequence)
	case EventDone:
		b = e.end(b, FinishUnknown, "")
		e.done = true
		b = e.f.done(e, b)
	}
	e.buf = b
	if len(b) == 0 {
		return nil
	}
	_, err := w.Write(b)
	return err
}

// end closes the parts still open and writes the finish, once.
func (e *streamEncoder) end(b []byte, f Finish, seq string) []byte {
	if e.finished {
		return b
	}
	for _, p := range e.order {
		if !p.stop {
			p.stop = true
			b = e.f.stop(e, b, p)
		}
	}
	e.finished, e.finish, e.seq = true, f, seq
	return e.f.finish(e, b)
}

func (e *streamEncoder) openPart(i int, tool bool, id, name string) *encPart {
	p := &encPart{n: len(e.order), tool: tool, id: id, name: name}
	if tool {
		p.toolN = e.tools
		e.tools++
		if p.id == "" {
			p.id = "call_" + strconv.Itoa(p.toolN)
		}
	}
	e.parts[i] = p
	e.order = append(e.order, p)
	return p
}

func (e *streamEncoder) keepText(p *encPart, s string) error {
	if !e.keep {
		return nil
	}
	e.kept += len(s)
	if e.kept > maxKept {
		return errAnswerTooLarge
	}
	p.kept.WriteString(s)
	return nil
}

// streamBaseID is the member's answer id without the prefix its format
// gives it, so that each caller format can put its own; a made-up one when
// the member gave none.
func streamBaseID(id string) string {
	for _, pre := range []string{"chatcmpl-", "msg_", "resp_"} {
		if strings.HasPrefix(id, pre) && len(id) > len(pre) {
			return id[len(pre):]
		}
	}
	if id != "" {
		return id
	}
	var r [12]byte
	_, _ = rand.Read(r[:])
	return hex.EncodeToString(r[:])
}

// callerInput is the caller's view of input tokens in the OpenAI formats:
// cached tokens (read or written) included.
func callerInput(u routing.Usage) int64 {
	return u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes
// U+FFFD, so the output is always valid JSON.
func appendJSONString(b []byte, s string) []byte {
	const hexd = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexd[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func appendInt(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) }
