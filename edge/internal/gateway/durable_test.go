package gateway_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"weir.dev/edge/internal/fakeprovider"
	"weir.dev/edge/internal/usage"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

// The tests below prove DESIGN.md §1.3's "usage exactly once" against a
// kill of the edge: the call's record reaches the sink (the journal) before
// the caller can hold the whole answer. The sink blocks each record until
// the test has looked at what the caller received by then.

// gateSink passes each record to next only once the test releases it.
type gateSink struct {
	next    usage.Sink
	called  chan struct{}
	release chan struct{}
	once    sync.Once
}

func (s *gateSink) open() { s.once.Do(func() { close(s.release) }) }

func (s *gateSink) Record(ctx context.Context, rec *telemetryv1.CallRecord) error {
	s.called <- struct{}{}
	select {
	case <-s.release:
	case <-time.After(10 * time.Second): // a broken test must not hang
	}
	return s.next.Record(ctx, rec)
}

// part is one write of a scripted upstream answer, flushed, after a pause.
type part struct {
	pause time.Duration
	data  []byte
}

// scripted is an upstream that answers every request with status, header
// and parts; when hangUp is set it then drops the connection without ending
// the body.
func scripted(t *testing.T, header http.Header, parts []part, hangUp bool) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(http.StatusOK)
		for _, p := range parts {
			time.Sleep(p.pause)
			_, _ = w.Write(p.data)
			_ = http.NewResponseController(w).Flush()
		}
		if hangUp {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// received is what the caller has read of an answer so far.
type received struct {
	mu   sync.Mutex
	b    bytes.Buffer
	err  error
	done chan struct{}
}

func (r *received) has(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Contains(r.b.Bytes(), []byte(s))
}

func (r *received) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]byte(nil), r.b.Bytes()...)
}

// call posts body to path and reads the answer as it arrives.
func (h *harness) call(path, body string) *received {
	rc := &received{done: make(chan struct{})}
	go func() {
		defer close(rc.done)
		req, _ := http.NewRequest(http.MethodPost, h.url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+callerKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			rc.mu.Lock()
			rc.err = err
			rc.mu.Unlock()
			return
		}
		defer resp.Body.Close()
		buf := make([]byte, 512)
		for {
			n, err := resp.Body.Read(buf)
			rc.mu.Lock()
			rc.b.Write(buf[:n])
			if err != nil && !errors.Is(err, io.EOF) {
				rc.err = err
			}
			rc.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return rc
}

func sseParts(events ...string) []part {
	var ps []part
	for i, e := range events {
		p := part{data: []byte(e)}
		if i == len(events)-1 {
			// The end comes apart, so everything before it can reach the
			// caller before the edge reads the end.
			p.pause = 50 * time.Millisecond
		}
		ps = append(ps, p)
	}
	return ps
}

func bedrockChunk(t *testing.T, ev string) []byte {
	t.Helper()
	payload, _ := json.Marshal(map[string]string{"bytes": base64.StdEncoding.EncodeToString([]byte(ev))})
	m := eventstream.Message{Payload: payload}
	m.Headers.Set(":message-type", eventstream.StringValue("event"))
	m.Headers.Set(":event-type", eventstream.StringValue("chunk"))
	m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	var b bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// bigJSON is a non-streamed chat answer of about n bytes, usage last, so
// that writing it puts most of it on the wire at once.
func bigJSON(n int) []byte {
	return []byte(`{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("x", n) + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}` + "\n")
}

var sseHeader = http.Header{"Content-Type": {"text/event-stream"}}

func TestRecordDurableBeforeAnswerEnds(t *testing.T) {
	t.Parallel()
	claude := []*configv1.Model{chatModel("claude-x")}
	gpt := []*configv1.Model{chatModel("gpt-x")}
	openaiStream := []string{
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":null}],\"usage\":null}\n\n",
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n",
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":7,\"total_tokens\":18}}\n\n",
		"data: [DONE]\n\n",
	}
	anthropicEvents := []string{
		`{"type":"message_start","message":{"id":"m1","type":"message","role":"assistant","content":[],"model":"claude-x","usage":{"input_tokens":11,"cache_read_input_tokens":3,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}`,
		`{"type":"message_stop"}`,
	}
	var anthropicSSE []string
	var bedrockFrames []part
	for i, e := range anthropicEvents {
		var ev struct{ Type string }
		_ = json.Unmarshal([]byte(e), &ev)
		anthropicSSE = append(anthropicSSE, "event: "+ev.Type+"\ndata: "+e+"\n\n")
		p := part{data: bedrockChunk(t, e)}
		if i == len(anthropicEvents)-1 {
			p.pause = 50 * time.Millisecond
		}
		bedrockFrames = append(bedrockFrames, p)
	}
	big := bigJSON(64 << 10)
	// A body of unknown length (chunked) is streamed through: its end comes
	// in one large write so the relay's last write is large too.
	chunked := []part{{data: big[:1000]}, {pause: 50 * time.Millisecond, data: big[1000:]}}
	withUsage := `{"model":"gpt-x","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
	messagesStream := `{"model":"claude-x","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hello"}]}`

	tests := []struct {
		name   string
		wire   configv1.WireFormat
		models []*configv1.Model
		header http.Header
		parts  []part
		path   string
		body   string
		// before is the last thing the caller must have before the record
		// is written (empty: nothing need have arrived); end marks the
		// answer's end, which it must not have.
		before, end string
		in, out     int64
	}{
		{name: "openai chat stream", wire: configv1.WireFormat_WIRE_FORMAT_OPENAI, models: gpt, header: sseHeader,
			parts: sseParts(openaiStream...), path: "/v1/chat/completions", body: withUsage,
			before: `"completion_tokens":7`, end: "[DONE]", in: 11, out: 7},
		{name: "anthropic messages stream", wire: configv1.WireFormat_WIRE_FORMAT_ANTHROPIC, models: claude, header: sseHeader,
			parts: sseParts(anthropicSSE...), path: "/v1/messages", body: messagesStream,
			before: "event: message_delta", end: "message_stop", in: 14, out: 7},
		{name: "bedrock stream as anthropic SSE", wire: configv1.WireFormat_WIRE_FORMAT_BEDROCK, models: claude,
			header: http.Header{"Content-Type": {"application/vnd.amazon.eventstream"}},
			parts:  bedrockFrames, path: "/v1/messages", body: messagesStream,
			before: "event: message_delta", end: "message_stop", in: 14, out: 7},
		{name: "non-streamed answer", wire: configv1.WireFormat_WIRE_FORMAT_OPENAI, models: gpt,
			header: http.Header{"Content-Type": {"application/json"}, "Content-Length": {strconv.Itoa(len(big))}}, parts: []part{{data: big}},
			path: "/v1/chat/completions", body: chatBody, end: `"total_tokens":18}}`, in: 11, out: 7},
		{name: "non-streamed answer of unknown length", wire: configv1.WireFormat_WIRE_FORMAT_OPENAI, models: gpt,
			header: http.Header{"Content-Type": {"application/json"}}, parts: chunked,
			path: "/v1/chat/completions", body: chatBody, end: `"total_tokens":18}}`, in: 11, out: 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gate := &gateSink{called: make(chan struct{}, 1), release: make(chan struct{})}
			up := scripted(t, tc.header, tc.parts, false)
			h := newHarnessSink(t, func(m *usage.Memory) usage.Sink { gate.next = m; return gate },
				recordSpec{name: "rec", wire: tc.wire, models: tc.models, members: []fakeMember{{name: "m", url: up}}})
			rc := h.call(tc.path, tc.body)
			defer gate.open() // a failing test does not hold the call
			select {
			case <-gate.called:
			case <-rc.done:
				t.Fatalf("answered without a record: %v %q", rc.err, rc.bytes())
			case <-time.After(10 * time.Second):
				t.Fatal("no record written")
			}
			// The record is being written. The caller has what came before
			// the end …
			deadline := time.Now().Add(5 * time.Second)
			for tc.before != "" && !rc.has(tc.before) {
				if time.Now().After(deadline) {
					t.Fatalf("the caller lacks %q while the record is written: %q", tc.before, rc.bytes())
				}
				time.Sleep(time.Millisecond)
			}
			// … and not the end, not even after a while.
			time.Sleep(150 * time.Millisecond)
			if rc.has(tc.end) {
				t.Fatalf("the caller had the answer's end (%q) before its record was written", tc.end)
			}
			gate.open()
			<-rc.done
			got := rc.bytes()
			if rc.err != nil || !bytes.Contains(got, []byte(tc.end)) {
				t.Fatalf("answer %v %q", rc.err, got)
			}
			if tc.end == `"total_tokens":18}}` && !bytes.Equal(got, big) {
				t.Fatalf("the body changed: %d bytes, want %d", len(got), len(big))
			}
			rec := h.record(1)
			if rec.Outcome != telemetryv1.CallOutcome_CALL_OUTCOME_ANSWERED || rec.Status != 200 ||
				rec.Usage.GetInputTokens()+rec.Usage.GetCacheReadTokens() != tc.in || rec.Usage.GetOutputTokens() != tc.out ||
				len(rec.sent()) != 1 || rec.sent()[0] != "m:200:answered" || rec.Duration.AsDuration() <= 0 {
				t.Fatalf("record %v", rec.CallRecord)
			}
			time.Sleep(50 * time.Millisecond)
			if n := len(h.sink.Records()); n != 1 {
				t.Fatalf("%d records for one call", n)
			}
		})
	}
}

func TestErrorAfterEndIsNoSecondRecord(t *testing.T) {
	t.Parallel()
	// The provider drops the connection right after [DONE]: the caller has
	// its whole answer, so the call stays answered, recorded once, with no
	// error event after its end.
	events := []string{
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n",
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":7,\"total_tokens\":18}}\n\n",
		"data: [DONE]\n\n",
	}
	up := scripted(t, sseHeader, sseParts(events...), true)
	h := newHarness(t, recordSpec{name: "rec", wire: configv1.WireFormat_WIRE_FORMAT_OPENAI, models: []*configv1.Model{chatModel("gpt-x")},
		members: []fakeMember{{name: "m", url: up}}})
	res := h.post("/v1/chat/completions", `{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if _, data := sseEvents(res.body); res.status != 200 || len(data) == 0 || data[len(data)-1] != "[DONE]" {
		t.Fatalf("%d %q", res.status, res.body)
	}
	rec := h.record(1)
	if rec.Outcome != telemetryv1.CallOutcome_CALL_OUTCOME_ANSWERED || rec.Usage.GetOutputTokens() != 7 {
		t.Fatalf("record %v", rec.CallRecord)
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(h.sink.Records()); n != 1 {
		t.Fatalf("%d records for one call", n)
	}
}

// failSink loses every record.
type failSink struct{}

func (failSink) Record(context.Context, *telemetryv1.CallRecord) error {
	return errors.New("journal: no space left on device")
}

func TestRecordLostStillAnswers(t *testing.T) {
	t.Parallel()
	// A record the sink cannot take does not cost the caller its answer; it
	// is counted for operators.
	h := newHarnessSink(t, func(*usage.Memory) usage.Sink { return failSink{} }, pool(t, "a"))
	res := h.post("/v1/chat/completions", `{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if _, data := sseEvents(res.body); res.status != 200 || data[len(data)-1] != "[DONE]" {
		t.Fatalf("%d %q", res.status, res.body)
	}
	rec := httptest.NewRecorder()
	gatewayMetrics(h).Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), "weir_call_records_lost_total 1") {
		t.Fatal("the lost record was not counted")
	}
}

func TestCacheReportInRecord(t *testing.T) {
	t.Parallel()
	// R-SEE-3: the record, written before the answer ends, carries the
	// cache report of a job that moved to another member.
	h := newHarness(t, pool(t, "a", "b"))
	if res := h.post("/v1/chat/completions", chatBody, "X-Weir-Job", "job-1"); res.status != 200 || res.header.Get("X-Weir-Member") != "a" {
		t.Fatalf("first call %d %s", res.status, res.header.Get("X-Weir-Member"))
	}
	if rec := h.record(1); rec.Cache != nil {
		t.Fatalf("first call's cache report %v", rec.Cache)
	}
	h.fakes["a"].Enqueue(fakeprovider.RateLimited(2 * time.Second))
	if res := h.post("/v1/chat/completions", `{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hello"}]}`, "X-Weir-Job", "job-1"); res.status != 200 || res.header.Get("X-Weir-Member") != "b" {
		t.Fatalf("second call %d %s", res.status, res.header.Get("X-Weir-Member"))
	}
	first, second := h.record(1), h.record(2)
	c := second.Cache
	if c == nil || c.Miss != "member_changed" || c.JobHash != first.JobHash || c.PreviousMember == "" || c.PreviousMember == c.Member {
		t.Fatalf("cache report %v", c)
	}
}
