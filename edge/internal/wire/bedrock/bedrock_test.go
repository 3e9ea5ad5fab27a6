package bedrock

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"weir.dev/routing"
)

// bufOut keeps what was written, and how much of it was when Complete was
// called.
type bufOut struct {
	bytes.Buffer
	completes int
	at        int
	u         routing.Usage
}

func (*bufOut) Start(int, http.Header) {}
func (*bufOut) Flush()                 {}
func (o *bufOut) Complete(u routing.Usage) {
	o.completes++
	o.at, o.u = o.Len(), u
}

func frame(t testing.TB, msgType, eventType string, payload []byte) []byte {
	var b bytes.Buffer
	m := eventstream.Message{Payload: payload}
	m.Headers.Set(":message-type", eventstream.StringValue(msgType))
	if msgType == "exception" {
		m.Headers.Set(":exception-type", eventstream.StringValue(eventType))
	} else {
		m.Headers.Set(":event-type", eventstream.StringValue(eventType))
	}
	m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	if err := eventstream.NewEncoder().Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func chunk(t testing.TB, ev string) []byte {
	p, _ := json.Marshal(map[string]string{"bytes": base64.StdEncoding.EncodeToString([]byte(ev))})
	return frame(t, "event", "chunk", p)
}

func TestRelayEventStream(t *testing.T) {
	t.Parallel()
	var in bytes.Buffer
	in.Write(chunk(t, `{"type":"message_start","message":{"usage":{"input_tokens":12,"cache_read_input_tokens":3,"output_tokens":1}}}`))
	in.Write(chunk(t, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`))
	in.Write(chunk(t, `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}`))
	in.Write(chunk(t, `{"type":"message_stop"}`))
	var out bufOut
	u, err := RelayEventStream(&in, &out)
	if err != nil {
		t.Fatal(err)
	}
	if u.InputTokens != 12 || u.CacheReadTokens != 3 || u.OutputTokens != 7 {
		t.Fatalf("usage %+v", u)
	}
	s := out.String()
	if !strings.HasPrefix(s, "event: message_start\ndata: {") || !strings.HasSuffix(s, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n") || strings.Count(s, "event: ") != 4 {
		t.Fatalf("sse %q", s)
	}
	// The answer is completed, with its final usage, before message_stop
	// is written.
	if out.completes != 1 || out.u != u || !strings.HasPrefix(s[out.at:], "event: message_stop\n") || strings.Contains(s[:out.at], "message_stop") {
		t.Fatalf("Complete called %d times at %d of %q, usage %+v", out.completes, out.at, s, out.u)
	}
}

func TestRelayEventStreamException(t *testing.T) {
	t.Parallel()
	// R-FAIL-11: an exception inside the stream ends the relay with an error.
	var in bytes.Buffer
	in.Write(chunk(t, `{"type":"message_start","message":{"usage":{"input_tokens":1}}}`))
	in.Write(frame(t, "exception", "throttlingException", []byte(`{"message":"slow down"}`)))
	var out bufOut
	_, err := RelayEventStream(&in, &out)
	var se *StreamError
	if !errors.As(err, &se) || se.Type != "throttlingException" || se.Message != "slow down" {
		t.Fatalf("err %v", err)
	}
	if out.completes != 0 {
		t.Fatal("a failed stream was completed")
	}
}

func TestRelayEventStreamCut(t *testing.T) {
	t.Parallel()
	b := chunk(t, `{"type":"message_stop"}`)
	var out bufOut
	if _, err := RelayEventStream(bytes.NewReader(b[:len(b)-5]), &out); err == nil {
		t.Fatal("a cut frame was not an error")
	}
}

func FuzzRelayEventStream(f *testing.F) {
	f.Add(chunk(f, `{"type":"message_stop"}`))
	f.Add(frame(f, "exception", "x", []byte(`{}`)))
	f.Add([]byte{0, 0, 0, 16, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var out bufOut
		_, err := RelayEventStream(bytes.NewReader(b), &out)
		if err == nil && len(b) > 0 && out.Len() == 0 && !bytes.Contains(b, []byte("chunk")) {
			// frames that are not chunks are skipped: fine
			return
		}
		if err != nil && errors.Is(err, io.EOF) {
			t.Fatalf("bare EOF reported as error: %v", err)
		}
	})
}
