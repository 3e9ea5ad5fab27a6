package console

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// TestInProcessStreams checks that the in-process transport hands back the
// response before the handler ends, delivers each write as it is made,
// copies trailers and cancels the handler when the body is closed.
func TestInProcessStreams(t *testing.T) {
	t.Parallel()
	step := make(chan struct{})
	cancelled := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "Bearer x" {
			t.Errorf("Authorization = %q", got)
		}
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Trailer", "X-Done")
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write(append([]byte("got "), body...))
		w.(http.Flusher).Flush()
		<-step // the client has read the first chunk already
		_, _ = w.Write([]byte(";second"))
		w.Header().Set("X-Done", "yes")
		if r.URL.Query().Get("hang") != "" {
			<-r.Context().Done()
			close(cancelled)
		}
	})
	rt := inProcess{h: h}
	req, _ := http.NewRequest(http.MethodPost, "http://x/stream", stringsReader("hello"))
	req.Header.Set("Authorization", "Bearer x")
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("Content-Type") != "text/plain" {
		t.Fatalf("status %d, header %v", resp.StatusCode, resp.Header)
	}
	buf := make([]byte, 9)
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "got hello" {
		t.Fatalf("first chunk %q, %v", buf, err)
	}
	close(step)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != ";second" {
		t.Fatalf("rest %q, %v", rest, err)
	}
	if got := resp.Trailer.Get("X-Done"); got != "yes" {
		t.Fatalf("trailer X-Done = %q", got)
	}
	_ = resp.Body.Close()

	// Closing the body early cancels the handler.
	step = make(chan struct{})
	req, _ = http.NewRequest(http.MethodPost, "http://x/stream?hang=1", stringsReader("again"))
	req.Header.Set("Authorization", "Bearer x")
	resp, err = rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	close(step)
	_ = resp.Body.Close()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("handler not cancelled after the body was closed")
	}
}

// TestInProcessCancelledBeforeHeader returns the context's error when the
// handler has not answered yet.
func TestInProcessCancelledBeforeHeader(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	rt := inProcess{h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release })}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://x/", nil)
	if _, err := rt.RoundTrip(req); err == nil {
		t.Fatal("no error")
	}
}

type sr struct {
	s string
	i int
}

func (r *sr) Read(p []byte) (int, error) {
	if r.i >= len(r.s) {
		return 0, io.EOF
	}
	n := copy(p, r.s[r.i:])
	r.i += n
	return n, nil
}

func stringsReader(s string) io.Reader { return &sr{s: s} }

// TestSafeNext keeps redirects on the console.
func TestSafeNext(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                           "/console/",
		"/console/tenants":           "/console/tenants",
		"/console/calls?since=1h":    "/console/calls?since=1h",
		"//evil.example/console/":    "/console/",
		"https://evil.example/x":     "/console/",
		"/console/../admin":          "/console/",
		"/other":                     "/console/",
		"/console/login?next=/x":     "/console/",
		"/console/\\evil":            "/console/",
		"javascript:alert(1)":        "/console/",
		"/console//evil.example":     "/console/",
		"/console/x\r\nSet-Cookie:a": "/console/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSessionSeal round-trips a session and refuses tampering and expiry.
func TestSessionSeal(t *testing.T) {
	t.Parallel()
	k, err := deriveKeys(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	sid := bytes.Repeat([]byte{4}, sessionIDSize)
	v, err := k.seal(sid, "weir_adm_secret", now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if id, got, err := k.open(v, now); err != nil || got != "weir_adm_secret" || !bytes.Equal(id, sid) {
		t.Fatalf("open = %x %q, %v", id, got, err)
	}
	if _, _, err := k.open(v, now.Add(time.Hour)); err == nil {
		t.Fatal("expired session opened")
	}
	b := []byte(v)
	b[len(b)-3] ^= 1
	if _, _, err := k.open(string(b), now); err == nil {
		t.Fatal("tampered session opened")
	}
	other, _ := deriveKeys(append(make([]byte, 31), 1))
	if _, _, err := other.open(v, now); err == nil {
		t.Fatal("session opened under another master key")
	}
	if k.checkCSRF("session", v, k.csrfToken("login", v)) {
		t.Fatal("a login CSRF token passed as a session one")
	}
}
