package wire

import (
	"errors"
	"io"
	"net/http"
	"sync"

	"weir.dev/routing"
)

// maxBufferedBody is the largest non-streamed answer the edge buffers whole
// to read its usage; a larger one is streamed through and its usage read
// from the tail, where providers put it.
const maxBufferedBody = 1 << 20

// maxPooledBody is the largest buffer RelayBody keeps for the next answer.
const maxPooledBody = 64 << 10

// bodyBufs holds RelayBody's buffers for small answers (*[]byte): the body
// is written to the caller (Out.Write retains nothing) before it returns.
var bodyBufs sync.Pool

// getBodyBuf returns a buffer of length n and, when it is to go back to the
// pool after use (putBodyBuf), its pool entry.
func getBodyBuf(n int) (*[]byte, []byte) {
	if n > maxPooledBody {
		return nil, make([]byte, n)
	}
	bp, _ := bodyBufs.Get().(*[]byte)
	if bp == nil || cap(*bp) < n {
		b := make([]byte, n, max(n, 4<<10))
		return &b, b
	}
	return bp, (*bp)[:n]
}

// putBodyBuf gives a buffer from getBodyBuf back to the pool.
func putBodyBuf(bp *[]byte) {
	if bp != nil {
		bodyBufs.Put(bp)
	}
}

// tailSize is how much of a large answer is kept to find its usage.
const tailSize = 64 << 10

// RelayBody copies a non-streamed answer to the caller and returns its
// usage, read by parse from the whole body when it is small, else from the
// body's last tailSize bytes. It calls out.Complete before the caller can
// hold the whole answer: a small body is read whole, Complete is called,
// then the body is written in one go; a large one (or one of unknown
// length, e.g. decompressed) is streamed through holding back its last
// non-space byte and the whitespace after it (a JSON answer's closing
// brace), which are written after Complete at the end of the body. A body
// cut by an error is not completed and its held-back bytes are not written:
// the gateway ends the answer with an error.
func RelayBody(resp *http.Response, out Out, parse func([]byte) (routing.Usage, bool)) (routing.Usage, error) {
	if resp.ContentLength >= 0 && resp.ContentLength <= maxBufferedBody {
		bp, body := getBodyBuf(int(resp.ContentLength))
		defer putBodyBuf(bp)
		n, err := io.ReadFull(resp.Body, body)
		body = body[:n]
		if errors.Is(err, io.EOF) && resp.ContentLength == 0 {
			err = nil
		}
		var u routing.Usage
		if err == nil {
			u, _ = parse(body)
			out.Complete(u)
		}
		StartFrom(out, resp.StatusCode, resp.Header, false)
		if len(body) > 0 {
			if _, werr := out.Write(body); werr != nil {
				return u, werr
			}
		}
		if err != nil {
			return routing.Usage{}, err
		}
		return u, nil
	}
	StartFrom(out, resp.StatusCode, resp.Header, false)
	var tail []byte
	buf := make([]byte, 32<<10)
	// buf[:held] is read and not yet written: the body's last non-space
	// byte so far and the whitespace after it.
	held := 0
	for {
		n, err := resp.Body.Read(buf[held:])
		if n > 0 {
			tail = append(tail, buf[held:held+n]...)
			if len(tail) > 2*tailSize {
				tail = append(tail[:0], tail[len(tail)-tailSize:]...)
			}
			end := held + n
			cut := lastNonSpace(buf[:end])
			if cut < 0 || cut == 0 && end == len(buf) {
				// Only whitespace so far, or a whole buffer of it after the
				// held byte (no real answer): nothing to hold back.
				cut = end
			}
			if cut > 0 {
				if _, werr := out.Write(buf[:cut]); werr != nil {
					return routing.Usage{}, werr
				}
			}
			held = copy(buf, buf[cut:end])
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return routing.Usage{}, err
		}
	}
	u := usageFromTail(tail, parse)
	out.Complete(u)
	if held > 0 {
		if _, werr := out.Write(buf[:held]); werr != nil {
			return u, werr
		}
	}
	return u, nil
}

// lastNonSpace returns the index of b's last byte that is not JSON
// whitespace, or -1.
func lastNonSpace(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
		default:
			return i
		}
	}
	return -1
}

// usageFromTail reads usage from the tail of a large answer.
func usageFromTail(tail []byte, parse func([]byte) (routing.Usage, bool)) routing.Usage {
	u, _ := parse(tail)
	return u
}

// SSEHeaders are the headers of a streamed answer to the caller. Their
// values are shared by every call and must not be changed in place (Set,
// Add and Del replace them, which is fine).
func SSEHeaders() http.Header {
	return http.Header{"Content-Type": sseContentType, "Cache-Control": noCache}
}

// SSEAnswerHeaders are the headers of a streamed answer relayed from an
// upstream answer with headers up: SSEHeaders, and PassHeaders from up but
// for the content type, which stays text/event-stream.
func SSEAnswerHeaders(up http.Header) http.Header {
	h := make(http.Header, 4)
	AnswerHeaders(h, up, true)
	return h
}

// AnswerHeaders sets in dst the headers of an answer relayed from an
// upstream answer with headers up: PassHeaders from up (CopyPassHeaders),
// and for a stream (sse) SSEHeaders' content type and cache control.
func AnswerHeaders(dst, up http.Header, sse bool) {
	CopyPassHeaders(dst, up)
	if sse {
		dst["Content-Type"], dst["Cache-Control"] = sseContentType, noCache
	}
}

// FromStarter is an Out that starts an answer relayed from an upstream
// answer itself: StartFrom(status, up, sse) is Start(status, h) with h
// what AnswerHeaders(h, up, sse) sets, without the map h.
type FromStarter interface {
	StartFrom(status int, up http.Header, sse bool)
}

// StartFrom starts out's answer relayed from an upstream answer with status
// and headers up (AnswerHeaders), through out's StartFrom when it has one.
func StartFrom(out Out, status int, up http.Header, sse bool) {
	if fs, ok := out.(FromStarter); ok {
		fs.StartFrom(status, up, sse)
		return
	}
	h := make(http.Header, 4)
	AnswerHeaders(h, up, sse)
	out.Start(status, h)
}

// Shared header values, each capped at its length so that an append copies.
var (
	sseContentType = []string{"text/event-stream"}[:1:1]
	noCache        = []string{"no-cache"}[:1:1]
)
