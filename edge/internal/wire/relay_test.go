package wire

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"weir.dev/routing"
)

// recOut keeps what was written and where Complete was called.
type recOut struct {
	bytes.Buffer
	started   bool
	completes int
	at        int // bytes written when Complete was called
	startedAt bool
	u         routing.Usage
}

func (o *recOut) Start(int, http.Header) { o.started = true }
func (*recOut) Flush()                   {}
func (o *recOut) Complete(u routing.Usage) {
	o.completes++
	o.at, o.startedAt, o.u = o.Len(), o.started, u
}

// pieces reads the given strings one Read each.
type pieces struct{ p []string }

func (r *pieces) Read(b []byte) (int, error) {
	if len(r.p) == 0 {
		return 0, io.EOF
	}
	n := copy(b, r.p[0])
	if r.p[0] = r.p[0][n:]; r.p[0] == "" {
		r.p = r.p[1:]
	}
	return n, nil
}

func answer(n int) string {
	return `{"choices":[{"message":{"content":"` + strings.Repeat("x", n) + `"}}],"usage":{"prompt_tokens":11,"completion_tokens":7}}`
}

func TestRelayBodyCompletesBeforeTheEnd(t *testing.T) {
	t.Parallel()
	want := routing.Usage{InputTokens: 11, OutputTokens: 7}
	t.Run("known length: completed before anything is written", func(t *testing.T) {
		body := answer(100) + "\n"
		resp := &http.Response{StatusCode: 200, Header: http.Header{}, ContentLength: int64(len(body)), Body: io.NopCloser(strings.NewReader(body))}
		var out recOut
		u, err := RelayBody(resp, &out, OpenAIBodyUsage)
		if err != nil || u != want || out.String() != body || out.completes != 1 || out.at != 0 || out.startedAt || out.u != want {
			t.Fatalf("usage %+v err %v completes %d at %d started %v", u, err, out.completes, out.at, out.startedAt)
		}
	})
	big := answer(3 << 20)
	for _, tc := range []struct {
		name   string
		pieces []string
	}{
		{"end in its own read", []string{big[:len(big)-1], big[len(big)-1:]}},
		{"end with a newline after it", []string{big, "\n"}},
		{"end and whitespace apart", []string{big[:len(big)-1], "}", " \r\n", "\n"}},
		{"one read", []string{big + "\n"}},
		{"small, unknown length", []string{answer(10), "\n"}},
		{"byte by byte", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r io.Reader = &pieces{p: tc.pieces}
			body := strings.Join(tc.pieces, "")
			if tc.pieces == nil {
				body = answer(1000) + "\n "
				r = iotest.OneByteReader(strings.NewReader(body))
			}
			resp := &http.Response{StatusCode: 200, Header: http.Header{}, ContentLength: -1, Body: io.NopCloser(r)}
			var out recOut
			u, err := RelayBody(resp, &out, OpenAIBodyUsage)
			if err != nil || u != want || out.u != want || out.completes != 1 || out.String() != body {
				t.Fatalf("usage %+v err %v completes %d, %d of %d bytes", u, err, out.completes, out.Len(), len(body))
			}
			// Everything but the closing brace and what follows it was
			// written before Complete.
			if end := strings.LastIndexByte(body, '}'); out.at != end {
				t.Fatalf("completed with %d bytes written, want %d", out.at, end)
			}
		})
	}
	t.Run("a buffer of whitespace after the end is not held", func(t *testing.T) {
		body := answer(10) + strings.Repeat(" ", 100<<10)
		resp := &http.Response{StatusCode: 200, Header: http.Header{}, ContentLength: -1, Body: io.NopCloser(strings.NewReader(body))}
		var out recOut
		if _, err := RelayBody(resp, &out, OpenAIBodyUsage); err != nil || out.completes != 1 || out.String() != body {
			t.Fatalf("err %v completes %d, %d of %d bytes", err, out.completes, out.Len(), len(body))
		}
	})
	t.Run("a cut body is not completed", func(t *testing.T) {
		cut := errors.New("connection reset")
		r := io.MultiReader(strings.NewReader(big[:1<<20]), iotest.ErrReader(cut))
		resp := &http.Response{StatusCode: 200, Header: http.Header{}, ContentLength: -1, Body: io.NopCloser(r)}
		var out recOut
		if _, err := RelayBody(resp, &out, OpenAIBodyUsage); !errors.Is(err, cut) || out.completes != 0 {
			t.Fatalf("err %v completes %d", err, out.completes)
		}
		short := &http.Response{StatusCode: 200, Header: http.Header{}, ContentLength: 100, Body: io.NopCloser(strings.NewReader(big[:50]))}
		out = recOut{}
		if _, err := RelayBody(short, &out, OpenAIBodyUsage); err == nil || out.completes != 0 {
			t.Fatalf("err %v completes %d", err, out.completes)
		}
	})
}
