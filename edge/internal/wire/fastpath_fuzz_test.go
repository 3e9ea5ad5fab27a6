package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"weir.dev/routing"
)

// The fuzz tests below compare each fast path with the reading it
// shortcuts: encoding/json, or the simpler loop it replaced.

var jsonSeeds = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `01`, `1.`, `1.5e+3`, `1e`, `-`, `tru`, `true`, `nul`, `null `, ` {"a" : [1, 2,{"b":null}], "c":"\u00e9\n"} `,
	`{"a":"\x01"}`, `{"a":"\ud800"}`, `{"a":"\u12g4"}`, `{"a":"\q"}`, `{"a" 1}`, `{"a":1,}`, `[1,]`, `[,1]`, `{"a":1}{`, "\"\xff\xfe\"",
	`"abcdefghijklmnopqrstuvwxyz\"0123456789"`, `"abcdefgh\\"`, `{"model":"gpt-x","messages":[{"role":"user","content":"lorem ipsum dolor sit amet"}]}`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
}

// FuzzValid: Valid is json.Valid.
func FuzzValid(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid %v", s, got, want)
		}
	})
}

func TestValidDepth(t *testing.T) {
	t.Parallel()
	for _, n := range []int{9999, 10000, 10001} {
		for _, open := range []string{"[", `{"a":`} {
			closeB := "]"
			if open != "[" {
				closeB = "}"
			}
			s := []byte(strings.Repeat(open, n) + "1" + strings.Repeat(closeB, n))
			if got, want := Valid(s), json.Valid(s); got != want {
				t.Fatalf("depth %d %q: Valid %v, json.Valid %v", n, open, got, want)
			}
		}
	}
}

// oldSkipString is the byte loop skipString replaced.
func oldSkipString(b []byte, i int) (int, error) {
	i++
	for i < len(b) {
		switch b[i] {
		case '\\':
			i += 2
		case '"':
			return i + 1, nil
		default:
			i++
		}
	}
	return 0, ErrNotObject
}

// FuzzSkipString: skipString ends a string where the byte loop did.
func FuzzSkipString(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add(s)
	}
	f.Add(`"a\"b\\"c"`)
	f.Add(`"\`)
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(`"` + s)
		got, gerr := skipString(b, 0)
		want, werr := oldSkipString(b, 0)
		if got != want || (gerr == nil) != (werr == nil) {
			t.Fatalf("%q: skipString %d %v, byte loop %d %v", b, got, gerr, want, werr)
		}
	})
}

// oldLastUsageObject searched from the end with bytes.LastIndex.
func oldLastUsageObject(b []byte) []byte {
	for end := len(b); ; {
		i := bytes.LastIndex(b[:end], usageKey)
		if i < 0 {
			return nil
		}
		j := skipWS(b, i+len(usageKey))
		if j < len(b) && b[j] == ':' {
			j = skipWS(b, j+1)
			if j >= len(b) || b[j] != '{' {
				return nil
			}
			e, err := skipValue(b, j)
			if err != nil {
				return nil
			}
			return b[j:e]
		}
		end = i
	}
}

var chunkSeeds = []string{
	`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}],"usage":null}`,
	`{"id":"c","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":4}}}`,
	`{"choices":[{"x":1}],"usage":{"prompt_tokens":1}}`, `{"choices":null,"usage":{"prompt_tokens":1}}`,
	`{"type":"response.completed","response":{"id":"r","usage":{"input_tokens":7,"output_tokens":3,"input_tokens_details":{"cached_tokens":2}}}}`,
	`{"type":"response.completed","response":{"usage":null}}`, `{"response":{"Usage":{"input_tokens":1}},"usage":"x"}`,
	`{"Usage":{"prompt_tokens":1}}`, `{"usage":{"prompt_tokens":1},"usage":{"prompt_tokens":2}}`, `{"type":3,"usage":{"prompt_tokens":1}}`,
	`{"choices":{},"usage":{"prompt_tokens":1}}`, `{"usage":{"prompt_tokens":1},"choices":[{"delta":{"usage":null}}]}`,
	`{"usage" : { "prompt_tokens" : 2 } }`, `{"usage":{}}`, `{"usage":{"prompt_tokens":1.5}}`, `"usage":"usage":{}`, `{"us\u0061ge":{"prompt_tokens":1}}`,
	`{"response":{"usage":{"input_tokens":1},"usage":{"input_tokens":2}}}`, `{"response":[],"usage":null}`, `{"choices":[ ],"usage":{"prompt_tokens":1}}`,
}

// FuzzLastUsageObject: the forward search finds the object the backward
// one did.
func FuzzLastUsageObject(f *testing.F) {
	for _, s := range chunkSeeds {
		f.Add(s)
	}
	f.Add(`"usage"usage":{}`)
	f.Fuzz(func(t *testing.T, s string) {
		got, want := lastUsageObject([]byte(s)), oldLastUsageObject([]byte(s))
		if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
			t.Fatalf("%q: lastUsageObject %q, backward search %q", s, got, want)
		}
	})
}

// oldChunkUsage is OpenAIChunkUsage as encoding/json reads a chunk.
func oldChunkUsage(data []byte) (u routing.Usage, ok, usageOnly bool) {
	if oldLastUsageObject(data) == nil {
		return routing.Usage{}, false, false
	}
	var c struct {
		Usage    *openAIUsage      `json:"usage"`
		Choices  []json.RawMessage `json:"choices"`
		Type     string            `json:"type"`
		Response *struct {
			Usage *openAIUsage `json:"usage"`
		} `json:"response"`
	}
	if json.Unmarshal(data, &c) != nil {
		return routing.Usage{}, false, false
	}
	if c.Usage != nil {
		return c.Usage.usage(), true, c.Choices != nil && len(c.Choices) == 0
	}
	if c.Response != nil && c.Response.Usage != nil {
		return c.Response.Usage.usage(), true, false
	}
	return routing.Usage{}, false, false
}

// FuzzChunkUsage: OpenAIChunkUsage, fast path included, reads every chunk
// as encoding/json does.
func FuzzChunkUsage(f *testing.F) {
	for _, s := range chunkSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		gu, gok, gonly := OpenAIChunkUsage([]byte(s))
		wu, wok, wonly := oldChunkUsage([]byte(s))
		if gu != wu || gok != wok || gonly != wonly {
			t.Fatalf("%q: got %+v %v %v, encoding/json %+v %v %v", s, gu, gok, gonly, wu, wok, wonly)
		}
	})
}

func TestChunkUsageFastPath(t *testing.T) {
	t.Parallel()
	for _, s := range chunkSeeds[:5] {
		if _, _, _, read := scanChunkUsage([]byte(s)); !read {
			t.Errorf("%q: not read by the fast path", s)
		}
	}
}

// stepReader returns its chunks one Read at a time, then blocks (reports
// it would: err) so a test can see whether a Next needed more bytes.
type stepReader struct {
	chunks []string
	asked  bool
}

var errWouldBlock = errors.New("would block")

func (r *stepReader) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		r.asked = true
		return 0, errWouldBlock
	}
	n := copy(p, r.chunks[0])
	if n == len(r.chunks[0]) {
		r.chunks = r.chunks[1:]
	} else {
		r.chunks[0] = r.chunks[0][n:]
	}
	return n, nil
}

// FuzzSSEBuffered: Buffered is true exactly when the next Next returns an
// event from what was already read, without reading again.
func FuzzSSEBuffered(f *testing.F) {
	f.Add("data: a\n\ndata: b\n\n", "data: c\n", 3)
	f.Add("data: a\n\n\n\ndata: b", "\n\n", 1)
	f.Add("data: a\r\n\r\n:c\r\r\n\r\n", "", 2)
	f.Add("data: a\n\r\ndata: b\n\r", "\n", 0)
	f.Fuzz(func(t *testing.T, first, second string, nexts int) {
		if len(first) > 3000 { // within the reader's buffer
			return
		}
		src := &stepReader{chunks: []string{first, second}}
		r := NewSSEReader(src)
		for range nexts % 8 {
			if _, err := r.Next(); err != nil {
				return
			}
		}
		if src.asked {
			return // the second chunk is read: nothing more to compare
		}
		src.chunks = nil // what is buffered is all there is
		buffered := r.Buffered()
		_, err := r.Next()
		if errors.Is(err, ErrEventTooLarge) || errors.Is(err, io.EOF) {
			return
		}
		if got := err == nil && !src.asked; got != buffered {
			t.Fatalf("%q then %q after %d events: Buffered %v, Next without reading %v (%v)", first, second, nexts%8, buffered, got, err)
		}
	})
}

func BenchmarkValid(b *testing.B) {
	body := []byte(`{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("lorem ipsum dolor sit amet ", 36) + `"}]}`)
	b.Run("wire", func(b *testing.B) {
		for b.Loop() {
			Valid(body)
		}
	})
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			json.Valid(body)
		}
	})
}

// FuzzSetAbsent: for a valid object, SetAbsent either leaves the edit to
// EditTop or returns EditTop's bytes.
func FuzzSetAbsent(f *testing.F) {
	for _, s := range []string{`{}`, ` { } `, `{"model":"m","stream":true}`, `{"a":1 , "b":[{"stream_options":1}] }  `, `{"stream_options":null}`,
		`{"stream_optio\u006es":{}}`, `{"a":"\"stream_options\""}`, `[]`, `{"a":{}}` + "\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		if !json.Valid(b) {
			return
		}
		got, ok := SetAbsent(b, "stream_options", []byte(`{"include_usage":true}`))
		if !ok {
			return
		}
		want, err := EditTop(b, Edit{Key: "stream_options", Raw: []byte(`{"include_usage":true}`)})
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%q: SetAbsent %q, EditTop %q %v", s, got, want, err)
		}
	})
}
