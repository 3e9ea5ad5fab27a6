package wire

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestSSEReader(t *testing.T) {
	t.Parallel()
	in := "event: message_start\ndata: {\"a\":1}\n\n: keep-alive\n\ndata: line1\r\ndata: line2\r\n\r\ndata: [DONE]\n\n"
	r := NewSSEReader(strings.NewReader(in))
	var got []Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ev.Raw = append([]byte(nil), ev.Raw...)
		ev.Data = append([]byte(nil), ev.Data...)
		got = append(got, ev)
	}
	if len(got) != 4 {
		t.Fatalf("%d events", len(got))
	}
	if got[0].Name != "message_start" || string(got[0].Data) != `{"a":1}` || string(got[0].Raw) != "event: message_start\ndata: {\"a\":1}\n\n" {
		t.Fatalf("event 0 %+v", got[0])
	}
	if !got[1].Comment {
		t.Fatal("comment not flagged")
	}
	if string(got[2].Data) != "line1\nline2" {
		t.Fatalf("multi-line data %q", got[2].Data)
	}
	var raw strings.Builder
	for _, e := range got {
		raw.Write(e.Raw)
	}
	if raw.String() != in {
		t.Fatalf("raw bytes not preserved:\n%q\n%q", raw.String(), in)
	}
}

func TestSSEReaderCut(t *testing.T) {
	t.Parallel()
	// R-FAIL-11: a stream cut inside an event is an unexpected EOF.
	r := NewSSEReader(strings.NewReader("data: {\"a\":1}\n\ndata: {\"b\""))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v, want unexpected EOF", err)
	}
}

func FuzzSSEReader(f *testing.F) {
	f.Add("event: x\ndata: y\n\n")
	f.Add("data: a\r\n\r\n:c\n\n")
	f.Add("data")
	f.Fuzz(func(t *testing.T, s string) {
		r := NewSSEReader(strings.NewReader(s))
		total := 0
		for i := 0; i < 10000; i++ {
			ev, err := r.Next()
			if err != nil {
				break
			}
			total += len(ev.Raw)
			if len(ev.Raw) == 0 {
				t.Fatal("empty raw event")
			}
		}
		if total > len(s) {
			t.Fatalf("read %d bytes from %d", total, len(s))
		}
	})
}

// TestSSEReaderRelease: a reader given back by Release reads the next
// stream from its start, nothing of the last one left in it, whether the
// last one was read to its end or cut mid-event.
func TestSSEReaderRelease(t *testing.T) {
	big := "data: " + strings.Repeat("y", 100<<10) + "\n\n" // larger than a pooled event
	streams := []struct{ in, raw string }{
		{"data: one\n\ndata: two\n\n", "data: one\n\ndata: two\n\n"},
		{"data: x\n\nevent: x\ndata: {\"cut\":", "data: x\n\n"},
		{big, big},
		{"data: a\r\ndata: b\r\n\r\n: c\n\n", "data: a\r\ndata: b\r\n\r\n: c\n\n"},
	}
	for round := 0; round < 3; round++ {
		for _, s := range streams {
			r := NewSSEReader(strings.NewReader(s.in))
			var raw strings.Builder
			for {
				ev, err := r.Next()
				if err != nil {
					break
				}
				raw.Write(ev.Raw)
			}
			if raw.String() != s.raw {
				t.Fatalf("round %d: read %.40q, want %.40q", round, raw.String(), s.raw)
			}
			r.Release()
		}
	}
}
