package fakeprovider

import (
	"net/http"
	"strconv"
)

// writeJSON writes a whole JSON answer. When a cut is scripted it sends the
// status line, the full Content-Length and half the body, then closes.
func (c *call) writeJSON(status int, v any) {
	body := mustJSON(v)
	c.w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	c.writeHead(status, "application/json")
	if c.cutAfter >= 0 {
		_, _ = c.w.Write(body[:len(body)/2])
		c.cut()
		return
	}
	_, _ = c.w.Write(body)
}

// startSSE writes the status line of a server-sent events stream and
// flushes it, so that the client sees the headers before the first event.
func (c *call) startSSE() {
	h := c.w.Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.writeHead(http.StatusOK, "text/event-stream; charset=utf-8")
	c.flush()
}

// sseEvent writes and flushes one SSE event (with an "event:" line when
// name is not empty). It reports false when the stream must stop: the
// client went away, or the scripted cut came and the connection is closed.
func (c *call) sseEvent(name string, data []byte) bool {
	if c.cutNow() {
		c.cut()
		return false
	}
	buf := make([]byte, 0, len(name)+len(data)+16)
	if name != "" {
		buf = append(buf, "event: "...)
		buf = append(buf, name...)
		buf = append(buf, '\n')
	}
	buf = append(buf, "data: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	if _, err := c.w.Write(buf); err != nil {
		return false
	}
	c.flush()
	return true
}

// sseData writes an event with only a data line.
func (c *call) sseData(data []byte) bool { return c.sseEvent("", data) }

// finishStream ends a stream that ran to its end. A scripted cut whose count
// was not reached still cuts here, so the body never ends cleanly.
func (c *call) finishStream() {
	if c.cutAfter >= 0 {
		c.cut()
	}
}

// emitter sends one stream event of the Anthropic event sequence: as SSE on
// the Anthropic API, as an event-stream frame on Bedrock.
type emitter interface {
	emit(event string, data []byte) bool
}

// sseEmitter sends Anthropic events as named SSE events.
type sseEmitter struct{ c *call }

// emit sends data as one named SSE event.
func (e sseEmitter) emit(event string, data []byte) bool { return e.c.sseEvent(event, data) }
