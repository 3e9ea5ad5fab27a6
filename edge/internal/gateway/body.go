package gateway

import (
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"weir.dev/routing"
)

// DefaultBodyTimeout is how long a caller may take to send a whole request
// body when Config.BodyTimeout is zero.
const DefaultBodyTimeout = 60 * time.Second

// maxPooledBody is the largest read buffer kept for reuse. Larger bodies
// are read into buffers of their own, which the garbage collector takes back.
const maxPooledBody = 1 << 20

// minBodyRead is the room a read buffer is given before each read that finds
// it full: the first read of a body allocates no more than this.
const minBodyRead = 512

// bodyReader reads callers' request bodies whole (the edge holds a body to
// send it again on failover) while bounding what a caller can make the edge
// hold (DESIGN.md §5):
//
//   - memory grows with the bytes that arrived, never with a declared
//     Content-Length: a caller that declares 32 MiB and sends nothing costs
//     the edge a read buffer of minBodyRead bytes, not 32 MiB;
//   - a body declared larger than max is refused before any of it is read,
//     and a body that turns out larger is cut at max: 413;
//   - the whole body must arrive within timeout of the handler starting to
//     read it, else 408. The read deadline is cleared once the body is in,
//     so the answer (a stream may last minutes) is not bound by it.
//
// Bodies are read into pooled scratch buffers and copied out at their exact
// size, so a steady load reads without regrowing buffers and holds one
// allocation per body.
type bodyReader struct {
	max     int64
	timeout time.Duration // ≤ 0: no deadline
	bufs    sync.Pool     // *[]byte, empty, of capacity ≤ maxPooledBody
}

func newBodyReader(max int64, timeout time.Duration) *bodyReader {
	return &bodyReader{max: max, timeout: timeout}
}

// read reads r's body whole. rc, when not nil, is the caller's response
// controller, through which the read deadline is set; a server that does not
// support read deadlines (http.ErrNotSupported) reads without one. Errors are
// the gateway's own invalid_request answers: 413 for a body larger than
// max, 408 for one not in within timeout, 400 for a body that could not be
// read otherwise (the caller went away mid-body).
func (br *bodyReader) read(r *http.Request, rc *http.ResponseController) ([]byte, *routing.Error) {
	if r.ContentLength > br.max {
		return nil, tooLarge()
	}
	if r.Body == nil || r.Body == http.NoBody {
		return []byte{}, nil
	}
	if rc != nil && br.timeout > 0 {
		if rc.SetReadDeadline(time.Now().Add(br.timeout)) == nil {
			// Cleared whether or not the body came in whole: a connection
			// whose body read failed is closed by the server anyway.
			defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
		}
	}
	bp, _ := br.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	buf, err := readAll(r.Body, (*bp)[:0], br.max)
	var body []byte
	if err == nil {
		body = slices.Clone(buf)
		if body == nil {
			body = []byte{}
		}
		// Read to its end, the body is closed now rather than when the
		// handler returns: net/http then has nothing left to discard when
		// a stream's headers go out mid-handler (no reader made for it).
		_ = r.Body.Close()
	}
	if cap(buf) <= maxPooledBody {
		*bp = buf[:0]
		br.bufs.Put(bp)
	}
	if err != nil {
		switch {
		case errors.Is(err, errBodyTooLarge):
			return nil, tooLarge()
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, &routing.Error{Status: http.StatusRequestTimeout, Code: routing.CodeInvalidRequest,
				Message: "the request body did not arrive in time (" + br.timeout.String() + ")"}
		}
		return nil, &routing.Error{Status: http.StatusBadRequest, Code: routing.CodeInvalidRequest, Message: "request body could not be read"}
	}
	return body, nil
}

// closeUnread asks the server, by "Connection: close" in the answer's
// header h, to close an HTTP/1 connection whose request body the gateway
// answers without having read whole (a refusal before the body was read, a
// body too large, too slow or broken). Otherwise net/http would read and
// discard up to 256 KiB of what is left of the body before writing the
// answer, which a caller that never sends it could stall with no deadline.
// HTTP/2 needs nothing: "Connection: close" would end every stream of the
// connection there, and an unread stream costs only its flow-control window.
func closeUnread(h http.Header, r *http.Request) {
	if r.ProtoMajor == 1 && r.ContentLength != 0 {
		h.Set("Connection", "close")
	}
}

func tooLarge() *routing.Error {
	return &routing.Error{Status: http.StatusRequestEntityTooLarge, Code: routing.CodeInvalidRequest,
		Message: "request body is larger than the gateway accepts"}
}

// errBodyTooLarge is readAll's error for a body longer than its max.
var errBodyTooLarge = errors.New("request body too large")

// readAll appends what r yields to buf until io.EOF. Unlike a buffer sized
// from a declared length, buf grows only when it is full, by at least
// minBodyRead and otherwise as append grows slices (about doubling), so its
// capacity stays within about twice the bytes received plus minBodyRead.
// As through http.MaxBytesReader, it reads at most limit+1 bytes in all
// (no read asks for more), and a body longer than limit (a limit below 0
// counts as 0) is errBodyTooLarge.
func readAll(r io.Reader, buf []byte, limit int64) ([]byte, error) {
	limit = max(limit, 0)
	start := len(buf)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, minBodyRead)
		}
		room := buf[len(buf):cap(buf)]
		if left := limit - int64(len(buf)-start); int64(len(room))-1 > left {
			room = room[:left+1] // enough to see the body go past limit
		}
		n, err := r.Read(room)
		buf = buf[:len(buf)+n]
		if int64(len(buf)-start) > limit {
			return buf[:start+int(limit)], errBodyTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
