package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBoundedGzipStopsInflating: past max+1 bytes the reader fails instead
// of inflating the rest (what Connect would otherwise drain to report the
// size).
func TestBoundedGzipStopsInflating(t *testing.T) {
	t.Parallel()
	var member bytes.Buffer
	zw := gzip.NewWriter(&member)
	_, _ = zw.Write(make([]byte, 1<<20))
	_ = zw.Close()
	bomb := bytes.Repeat(member.Bytes(), 64) // 64 MiB of zeros
	d := &boundedGzip{max: 1000}
	for range 2 { // pooled decompressors are Reset and reused
		if err := d.Reset(bytes.NewReader(bomb)); err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, d)
		if n != 1001 || !errors.Is(err, errInflatedTooLarge) {
			t.Errorf("inflated %d bytes, err %v; want 1001 and errInflatedTooLarge", n, err)
		}
	}
	small := bytes.NewReader(member.Bytes())
	d = &boundedGzip{max: 1 << 20}
	if err := d.Reset(small); err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, d); n != 1<<20 || err != nil {
		t.Errorf("a message at the limit: %d bytes, %v", n, err)
	}
}

// TestBodyDeadlineEndsWithTheBody: once a body is read to its end, the
// body-read deadline no longer applies, so a response that outlives it
// (a server stream) is not cancelled — on HTTP/1.1 the server watches the
// connection with the same read deadline once the body is done.
func TestBodyDeadlineEndsWithTheBody(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	h := Limits{BodyReadTimeout: timeout}.withDefaults().limitBodies(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case <-r.Context().Done():
			t.Error("the request was cancelled after its body was read")
		case <-time.After(5 * timeout):
			_, _ = io.WriteString(w, "streamed")
		}
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, h, slog.New(slog.DiscardHandler), time.Second) }()
	defer func() { cancel(); <-done }()
	resp, err := http.Post("http://"+ln.Addr().String()+"/", "text/plain", strings.NewReader("request"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != "streamed" {
		t.Errorf("response %q, %v; want it whole", body, err)
	}
}
