package server

import (
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"time"

	"connectrpc.com/connect"
)

// Limits bound what one client can make the admin port hold (DESIGN §5).
// The zero value of a field means its default.
type Limits struct {
	// MaxBodyBytes bounds a request body as sent (http.MaxBytesHandler) and
	// each request message once decompressed (connect.WithReadMaxBytes; a
	// gzip body stops being inflated one byte past it). Larger requests
	// fail with ResourceExhausted. Default 4 MiB; the admin API's largest
	// requests (a provider record with its pool) are a few kilobytes.
	MaxBodyBytes int64
	// BodyReadTimeout bounds the time from a request's headers to the end
	// of its body; a body still arriving then is cut off, with its
	// connection. It is a per-request read deadline that ends with the
	// body, not http.Server.ReadTimeout, so server-streaming RPCs and the
	// console's event streams are not cut. Default 30s.
	BodyReadTimeout time.Duration
}

// Defaults of Limits, and the server-wide ones Serve applies.
const (
	DefaultMaxBodyBytes    = 4 << 20
	DefaultBodyReadTimeout = 30 * time.Second
	// readHeaderTimeout bounds the time to read a request's headers;
	// idleTimeout how long a keep-alive connection may wait for its next
	// request; maxHeaderBytes the size of a request's headers.
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 64 << 10
)

func (l Limits) withDefaults() Limits {
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if l.BodyReadTimeout <= 0 {
		l.BodyReadTimeout = DefaultBodyReadTimeout
	}
	return l
}

// handlerOptions are the Connect options every handler of the port gets:
// the decompressed-size limit and a gzip that stops inflating past it.
func (l Limits) handlerOptions() []connect.HandlerOption {
	return []connect.HandlerOption{
		connect.WithReadMaxBytes(int(l.MaxBodyBytes)),
		connect.WithCompression("gzip",
			func() connect.Decompressor { return &boundedGzip{max: l.MaxBodyBytes} },
			func() connect.Compressor { return gzip.NewWriter(io.Discard) }),
	}
}

// limitBodies applies MaxBodyBytes to the body as sent and BodyReadTimeout
// to its arrival.
func (l Limits) limitBodies(next http.Handler) http.Handler {
	next = http.MaxBytesHandler(next, l.MaxBodyBytes)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		// The deadline ends with the body: on HTTP/1.1, net/http lifts it
		// when the body is done and it starts watching the connection for
		// the client going away; on HTTP/2 it is the stream's body's alone.
		// Either way a response may stream for as long as it needs
		// (TestBodyDeadlineEndsWithTheBody). Not every ResponseWriter has
		// a connection to set a deadline on: the console's in-process
		// calls do not, and their bodies come from this process.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(l.BodyReadTimeout))
		next.ServeHTTP(w, r)
	})
}

// errInflatedTooLarge ends the inflation of a message past the limit.
var errInflatedTooLarge = errors.New("decompressed message exceeds the size limit")

// boundedGzip is a gzip reader that yields at most max+1 bytes of one
// message and then fails. Connect reads max+1 bytes to see that a message
// is too large and then drains the decompressor to report its size; the
// failure stops that drain, so a small compressed body never costs the CPU
// of inflating gigabytes.
type boundedGzip struct {
	gzip.Reader
	max, left int64
}

func (d *boundedGzip) Reset(r io.Reader) error {
	d.left = d.max + 1
	return d.Reader.Reset(r)
}

func (d *boundedGzip) Read(p []byte) (int, error) {
	if d.left <= 0 {
		return 0, errInflatedTooLarge
	}
	if int64(len(p)) > d.left {
		p = p[:d.left]
	}
	n, err := d.Reader.Read(p)
	d.left -= int64(n)
	return n, err
}
