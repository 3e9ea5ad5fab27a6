package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// inProcess is an http.RoundTripper that serves each request with an
// http.Handler in the same process: the console's Connect clients reach the
// admin API through it, so that every role check, tenant filter and
// validation is the API's own. Responses stream: the handler writes into a
// pipe the caller reads, so server-streaming RPCs (ExportUsage) work, and
// the response is returned as soon as the handler has written its header.
// Closing the response body cancels the handler's context.
type inProcess struct {
	h http.Handler
}

// RoundTrip serves req with the handler.
func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	sreq := req.Clone(ctx)
	if sreq.Body == nil {
		sreq.Body = http.NoBody
	}
	sreq.RequestURI = req.URL.RequestURI()
	// The API sees the browser's address (for its per-address limit on
	// failed authentications), else "in-process".
	sreq.RemoteAddr = "in-process"
	if a, ok := req.Context().Value(peerKey{}).(string); ok && a != "" {
		sreq.RemoteAddr = a
	}
	if sreq.Host == "" {
		sreq.Host = req.URL.Host
	}
	if sreq.Proto == "" {
		sreq.Proto, sreq.ProtoMajor, sreq.ProtoMinor = "HTTP/1.1", 1, 1
	}
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, pw: pw, ready: make(chan struct{}), req: req}
	go func() {
		defer func() {
			if p := recover(); p != nil {
				w.finish(fmt.Errorf("console: admin API handler panicked: %v", p))
				return
			}
			w.finish(nil)
		}()
		t.h.ServeHTTP(w, sreq)
	}()
	select {
	case <-w.ready:
	case <-ctx.Done():
		cancel()
		_ = pr.CloseWithError(ctx.Err())
		return nil, ctx.Err()
	}
	resp := w.resp
	resp.Body = &cancelBody{r: pr, cancel: cancel}
	return resp, nil
}

// pipeWriter is the handler's http.ResponseWriter (and http.Flusher).
type pipeWriter struct {
	req    *http.Request
	header http.Header
	pw     *io.PipeWriter

	once  sync.Once
	ready chan struct{}
	resp  *http.Response
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(code int) {
	w.once.Do(func() {
		h := w.header.Clone()
		trailer := http.Header{}
		// Trailers declared up front are filled in when the handler returns.
		for _, k := range h.Values("Trailer") {
			for _, name := range strings.Split(k, ",") {
				if name = strings.TrimSpace(name); name != "" {
					trailer[http.CanonicalHeaderKey(name)] = nil
				}
			}
		}
		h.Del("Trailer")
		w.resp = &http.Response{
			Status:        fmt.Sprintf("%d %s", code, http.StatusText(code)),
			StatusCode:    code,
			Proto:         "HTTP/1.1",
			ProtoMajor:    1,
			ProtoMinor:    1,
			Header:        h,
			Trailer:       trailer,
			ContentLength: -1,
			Request:       w.req,
		}
		close(w.ready)
	})
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(p)
}

// Flush is a no-op: every Write already reaches the reader.
func (w *pipeWriter) Flush() {}

// finish ends the response: it sends the header if the handler wrote
// nothing, copies the trailers and closes the pipe (with err when the
// handler failed).
func (w *pipeWriter) finish(err error) {
	w.WriteHeader(http.StatusOK)
	for k := range w.resp.Trailer {
		w.resp.Trailer[k] = w.header.Values(k)
	}
	for k, v := range w.header {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			w.resp.Trailer[http.CanonicalHeaderKey(name)] = v
		}
	}
	if err != nil {
		_ = w.pw.CloseWithError(err)
		return
	}
	_ = w.pw.Close()
}

// cancelBody is the response body: closing it cancels the handler.
type cancelBody struct {
	r      *io.PipeReader
	cancel context.CancelFunc
}

func (b *cancelBody) Read(p []byte) (int, error) { return b.r.Read(p) }

func (b *cancelBody) Close() error {
	b.cancel()
	_ = b.r.CloseWithError(errors.New("console: response body closed"))
	return nil
}

// peerKey is the context key of the browser's address (withPeer).
type peerKey struct{}

// withPeer passes the console request's remote address to the API requests
// made for it in-process.
func withPeer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), peerKey{}, r.RemoteAddr)))
	})
}
