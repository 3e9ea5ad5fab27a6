package wire

import (
	"errors"
	"io"
	"net/http"

	"weir.dev/edge/internal/routing"
)

// maxBufferedBody is the largest non-streamed answer the edge buffers whole
// to read its usage; a larger one is streamed through and its usage read
// from the tail, where providers put it.
const maxBufferedBody = 1 << 20

// tailSize is how much of a large answer is kept to find its usage.
const tailSize = 64 << 10

// RelayBody copies a non-streamed answer to the caller and returns its
// usage, read by parse from the whole body when it is small, else from the
// body's last tailSize bytes.
func RelayBody(resp *http.Response, out Out, parse func([]byte) (routing.Usage, bool)) (routing.Usage, error) {
	h := http.Header{}
	CopyPassHeaders(h, resp.Header)
	if resp.ContentLength >= 0 && resp.ContentLength <= maxBufferedBody {
		body := make([]byte, resp.ContentLength)
		n, err := io.ReadFull(resp.Body, body)
		body = body[:n]
		if errors.Is(err, io.EOF) && resp.ContentLength == 0 {
			err = nil
		}
		out.Start(resp.StatusCode, h)
		if len(body) > 0 {
			if _, werr := out.Write(body); werr != nil {
				return routing.Usage{}, werr
			}
		}
		if err != nil {
			return routing.Usage{}, err
		}
		u, _ := parse(body)
		return u, nil
	}
	out.Start(resp.StatusCode, h)
	var tail []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := out.Write(buf[:n]); werr != nil {
				return routing.Usage{}, werr
			}
			tail = append(tail, buf[:n]...)
			if len(tail) > 2*tailSize {
				tail = append(tail[:0], tail[len(tail)-tailSize:]...)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return routing.Usage{}, err
		}
	}
	return usageFromTail(tail, parse), nil
}

// usageFromTail reads usage from the tail of a large answer.
func usageFromTail(tail []byte, parse func([]byte) (routing.Usage, bool)) routing.Usage {
	u, _ := parse(tail)
	return u
}

// SSEHeaders are the headers of a streamed answer to the caller.
func SSEHeaders() http.Header {
	h := http.Header{}
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	return h
}
