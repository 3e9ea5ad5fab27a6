package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
)

// MaxEventSize bounds one Server-Sent Event; a longer event is an error, not
// an unbounded allocation.
const MaxEventSize = 4 << 20

// ErrEventTooLarge is returned for an event over MaxEventSize.
var ErrEventTooLarge = errors.New("sse: event too large")

// Event is one Server-Sent Event as read from an upstream stream.
type Event struct {
	// Name is the "event:" field ("" for unnamed events).
	Name string
	// Data is the "data:" lines joined with "\n".
	Data []byte
	// Raw is the event's bytes exactly as received, blank line included, so
	// the edge can pass it through unchanged.
	Raw []byte
	// Comment is true when the event holds only comment lines.
	Comment bool
}

// SSEReader reads Server-Sent Events (WHATWG "text/event-stream"): lines end
// in LF or CRLF; an empty line ends an event. A lone CR is not taken as a line
// end: no provider sends one, and reading line by line keeps the relay cheap.
type SSEReader struct {
	r    *bufio.Reader
	raw  bytes.Buffer
	data bytes.Buffer
}

// NewSSEReader reads events from r. Its read buffer is small (4 KiB): a
// long event grows Raw instead, and a thousand open streams stay cheap.
// The reader may come from those given back by Release.
func NewSSEReader(r io.Reader) *SSEReader {
	if s, _ := sseReaders.Get().(*SSEReader); s != nil {
		s.r.Reset(r)
		return s
	}
	return &SSEReader{r: bufio.NewReaderSize(r, 4<<10)}
}

// sseReaders holds released readers (*SSEReader), reset, for the next
// stream: a stream's read buffer and event buffers are not allocated anew.
var sseReaders sync.Pool

// maxPooledEvent is the largest event buffer a released reader keeps; a
// reader that read a longer event is left to the garbage collector.
const maxPooledEvent = 64 << 10

// Release gives the reader back for another stream once its caller is done
// with it: after Release neither the reader nor the Data and Raw of any
// event it returned may be used, and the reader no longer refers to the
// stream it read. It is called at most once, and is optional (a reader not
// released is garbage collected).
func (s *SSEReader) Release() {
	s.r.Reset(nil)
	s.raw.Reset()
	s.data.Reset()
	if s.raw.Cap() > maxPooledEvent || s.data.Cap() > maxPooledEvent {
		return
	}
	sseReaders.Put(s)
}

// Buffered reports whether a whole next event has already arrived, so a
// relay can write a burst of events before one flush without holding back
// an event that is complete: a partial event in the buffer does not count,
// nor do blank lines before it (Next skips them and would wait for the
// rest). It looks at the buffered bytes only up to the next event's end.
func (s *SSEReader) Buffered() bool {
	n := s.r.Buffered()
	if n == 0 {
		return false
	}
	b, _ := s.r.Peek(n)
	return eventEnd(b) >= 0
}

// eventEnd returns the length of b's first whole event as Next reads it
// (blank lines before it, its lines, the blank line that ends it), or -1
// when b holds none. A line ends in LF; it is blank when nothing but CRs
// come before its LF (Next trims CRs and LFs from a line's end).
func eventEnd(b []byte) int {
	seen := false // a line that is not blank
	for i := 0; i < len(b); {
		k := bytes.IndexByte(b[i:], '\n')
		if k < 0 {
			return -1
		}
		blank := true
		for _, c := range b[i : i+k] {
			if c != '\r' {
				blank = false
				break
			}
		}
		i += k + 1
		if !blank {
			seen = true
		} else if seen {
			return i
		}
	}
	return -1
}

// Next returns the next event; its Data and Raw are valid until the next
// call. At the end of the stream it returns io.EOF
// when the stream ended between events, or io.ErrUnexpectedEOF when it was
// cut inside one (a mid-stream cut, R-FAIL-11).
func (s *SSEReader) Next() (Event, error) {
	s.raw.Reset()
	s.data.Reset()
	var ev Event
	data := &s.data
	hasData, onlyComments, any := false, true, false
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && s.raw.Len() > 0 {
				return Event{}, io.ErrUnexpectedEOF
			}
			return Event{}, err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			if !any {
				// stray blank line between events: keep it in Raw of the next
				continue
			}
			ev.Data = data.Bytes()
			ev.Raw = s.raw.Bytes()
			ev.Comment = onlyComments && !hasData
			return ev, nil
		}
		any = true
		l := bytes.TrimRight(line, "\r\n")
		if l[0] == ':' {
			continue
		}
		onlyComments = false
		field, value := l, []byte(nil)
		if i := bytes.IndexByte(l, ':'); i >= 0 {
			field, value = l[:i], l[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "event":
			ev.Name = eventName(value)
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.Write(value)
			hasData = true
		}
	}
}

// eventNames holds the event names the providers' streams use, so that
// an event named one of them gets the name without an allocation of its
// own (an Anthropic stream names every event).
var eventNames = func() map[string]string {
	m := make(map[string]string)
	for _, n := range []string{
		// Anthropic Messages (and Bedrock's, relayed as these)
		"message_start", "content_block_start", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop", "ping", "error",
		// OpenAI Responses
		"response.created", "response.in_progress", "response.completed", "response.failed", "response.incomplete",
		"response.output_item.added", "response.output_item.done",
		"response.content_part.added", "response.content_part.done",
		"response.output_text.delta", "response.output_text.done",
		"response.function_call_arguments.delta", "response.function_call_arguments.done",
	} {
		m[n] = n
	}
	return m
}()

// eventName is b as a string: one of eventNames, else a new string.
func eventName(b []byte) string {
	if n, ok := eventNames[string(b)]; ok {
		return n
	}
	return string(b)
}

func (s *SSEReader) readLine() ([]byte, error) {
	start := s.raw.Len()
	for {
		chunk, err := s.r.ReadSlice('\n')
		s.raw.Write(chunk)
		if s.raw.Len() > MaxEventSize {
			return nil, ErrEventTooLarge
		}
		switch {
		case err == nil:
			return s.raw.Bytes()[start:], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case s.raw.Len() > start:
			return s.raw.Bytes()[start:], nil
		default:
			return nil, err
		}
	}
}
