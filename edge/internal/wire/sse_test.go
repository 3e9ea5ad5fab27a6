package wire

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
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

// sseEvents reads r to its end: each event's fields, and the error that
// ended it.
func sseEvents(r *SSEReader) (evs []string, err error) {
	for len(evs) < 10000 {
		ev, err := r.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, fmt.Sprintf("%q %q %q %v", ev.Name, ev.Data, ev.Raw, ev.Comment))
	}
	return evs, nil
}

// FuzzSSEReaderReleased: a reader released after part of one stream, then
// given another, reads the other exactly as a new reader does.
func FuzzSSEReaderReleased(f *testing.F) {
	f.Add("event: x\ndata: y\n\ndata: z", 1, "data: a\r\n\r\n:c\n\n")
	f.Add("data: "+strings.Repeat("q", 5000)+"\n\n", 0, "data: b\ndata: c\n\n\n")
	f.Fuzz(func(t *testing.T, first string, nexts int, second string) {
		r := NewSSEReader(strings.NewReader(first))
		for range nexts % 4 {
			if _, err := r.Next(); err != nil {
				break
			}
		}
		r.Release()
		want, wantErr := sseEvents(&SSEReader{r: bufio.NewReaderSize(strings.NewReader(second), 4<<10)})
		// Released readers come back from the pool, or new ones: either
		// must read second alike.
		for range 3 {
			r = NewSSEReader(strings.NewReader(second))
			got, err := sseEvents(r)
			if !slices.Equal(got, want) || err != wantErr {
				t.Fatalf("after %q: read %q (%v), want %q (%v)", first, got, err, want, wantErr)
			}
			r.Release()
		}
	})
}

// TestSSEEventNames: event names read alike whether or not they are among
// the known ones, and a known one costs no allocation.
func TestSSEEventNames(t *testing.T) {
	for _, name := range []string{"message_start", "response.completed", "ping", "custom", "", "message_start2", "Message_start"} {
		r := NewSSEReader(strings.NewReader("event: " + name + "\ndata: {}\n\n"))
		ev, err := r.Next()
		if err != nil || ev.Name != name {
			t.Fatalf("%q: read %q %v", name, ev.Name, err)
		}
	}
	b := []byte("content_block_delta")
	if n := testing.AllocsPerRun(100, func() { _ = eventName(b) }); n != 0 {
		t.Fatalf("%v allocations for a known name", n)
	}
}
