package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"weir.dev/routing"
)

// TestStreamDecoderFailures: a member stream reporting a failure is an
// error wrapping ErrStreamFailed with the member's message; malformed JSON
// is an error but not a reported failure.
func TestStreamDecoderFailures(t *testing.T) {
	cases := []struct {
		name   string
		w      routing.WireFormat
		ev     string
		data   string
		failed bool
		msg    string
	}{
		{"anthropic error event", routing.WireAnthropic, "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, true, "overloaded_error: Overloaded"},
		{"bedrock error by type", routing.WireBedrock, "", `{"type":"error","error":{"type":"api_error","message":"boom"}}`, true, "api_error: boom"},
		{"openai error chunk", routing.WireOpenAI, "", `{"error":{"message":"server overloaded","type":"server_error"}}`, true, "server_error: server overloaded"},
		{"gemini error chunk", routing.WireGemini, "", `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`, true, "UNAVAILABLE: The model is overloaded."},
		{"anthropic malformed", routing.WireAnthropic, "content_block_delta", `{"type":"content_block_delta",`, false, "malformed"},
		{"openai malformed", routing.WireOpenAI, "", `{"choices":[`, false, "malformed"},
		{"gemini malformed", routing.WireGemini, "", `not json`, false, "malformed"},
		{"openai wrong type", routing.WireOpenAI, "", `{"choices":"x"}`, false, "malformed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := NewDecoder(c.w).Decode(c.ev, []byte(c.data), func(Event) error { return nil })
			if err == nil || errors.Is(err, ErrStreamFailed) != c.failed || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err %v, want failed=%v containing %q", err, c.failed, c.msg)
			}
		})
	}
	if err := NewDecoder(routing.WireFormat(99)).Decode("", []byte("{}"), func(Event) error { return nil }); err == nil {
		t.Fatal("unknown wire format decoded")
	}
	var b bytes.Buffer
	if err := NewEncoder(routing.EndpointEmbeddings, "m", false).Encode(Event{Kind: EventStart}, &b); err == nil || b.Len() != 0 {
		t.Fatal("embeddings stream encoded")
	}
}

// TestStreamDecoderSkips: keep-alives, pings, events the decoder does not
// know and everything after the end yield nothing.
func TestStreamDecoderSkips(t *testing.T) {
	for _, c := range []struct {
		w          routing.WireFormat
		name, data string
	}{
		{routing.WireOpenAI, "", ""},
		{routing.WireAnthropic, "ping", `{"type":"ping"}`},
		{routing.WireAnthropic, "some_future_event", `{"type":"some_future_event"`},
		{routing.WireGemini, "", "  "},
	} {
		n := 0
		if err := NewDecoder(c.w).Decode(c.name, []byte(c.data), func(Event) error { n++; return nil }); err != nil || n != 0 {
			t.Errorf("%v %q: err %v, %d events", c.w, c.name, err, n)
		}
	}
	for dir, w := range streamWires {
		in := readStreamTranscript(t, "testdata/stream/"+dir+"/text.sse")
		d := NewDecoder(w)
		for _, m := range in {
			if err := d.Decode(m.name, m.data, func(Event) error { return nil }); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range in { // the whole stream again, after its end
			if err := d.Decode(m.name, m.data, func(e Event) error { t.Errorf("%s: %s after the end", dir, evString(e)); return nil }); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestStreamCut (R-FAIL-11): a member stream cut before its end yields no
// EventDone (the adapter then reports the cut), and no caller format gets
// its terminal event from an answer that has not ended.
func TestStreamCut(t *testing.T) {
	for key := range streamWants {
		dir, name, _ := strings.Cut(key, "/")
		in := readStreamTranscript(t, "testdata/stream/"+dir+"/"+name+".sse")
		// Every proper prefix of the member's events.
		for cut := 0; cut < len(in); cut++ {
			evs, err := decodeStream(streamWires[dir], in[:cut])
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs {
				if e.Kind == EventDone {
					t.Fatalf("%s cut at %d: EventDone", key, cut)
				}
			}
			for _, c := range streamCallers {
				out, _ := encodeStream(t, c.ep, c.includeUsage, evs)
				for _, term := range []string{"[DONE]", "message_stop", "response.completed", "response.incomplete"} {
					if bytes.Contains(out, []byte(term)) {
						t.Fatalf("%s cut at %d, %s: terminal %s written:\n%s", key, cut, c.name, term, out)
					}
				}
			}
		}
	}
	// Gemini without a finishReason chunk: no end.
	evs, _ := decodeStream(routing.WireGemini, []streamMemberEvent{{data: []byte(`{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}`)}})
	for _, e := range evs {
		if e.Kind == EventDone || e.Kind == EventFinish {
			t.Fatalf("gemini ended without finishReason: %s", evString(e))
		}
	}
}

// TestStreamEncoderWritesAtOnce: each piece is written by the Encode call
// that gets it, not held back.
func TestStreamEncoderWritesAtOnce(t *testing.T) {
	for _, c := range streamCallers {
		enc := NewEncoder(c.ep, "m", c.includeUsage)
		var b bytes.Buffer
		steps := []Event{{Kind: EventStart, ID: "x"}, {Kind: EventText, Text: "alpha"}, {Kind: EventText, Text: "beta"},
			{Kind: EventPartStop}, {Kind: EventToolCall, Index: 1, ToolCallID: "c1", ToolName: "fn"}, {Kind: EventToolArgs, Index: 1, Text: "{\"gamma\""}}
		for _, e := range steps {
			n := b.Len()
			if err := enc.Encode(e, &b); err != nil {
				t.Fatal(err)
			}
			if e.Text != "" && !strings.Contains(b.String()[n:], strings.ReplaceAll(e.Text, `"`, `\"`)) {
				t.Errorf("%s: %q not written at once: %q", c.name, e.Text, b.String()[n:])
			}
		}
	}
}

// TestStreamEncoderRobust: event sequences no Decoder makes still give a
// valid caller stream: no EventStart, no finish, parts open at the finish,
// pieces for parts never opened, of the wrong kind or closed, a tool call
// without id, and nothing after EventDone.
func TestStreamEncoderRobust(t *testing.T) {
	seqs := map[string][]Event{
		"no start, no finish": {{Kind: EventText, Text: "hi"}, {Kind: EventDone}},
		"open at finish": {{Kind: EventStart}, {Kind: EventText, Index: 3, Text: "a"}, {Kind: EventToolCall, Index: 7, ToolName: "f"},
			{Kind: EventToolArgs, Index: 7, Text: "{}"}, {Kind: EventFinish, Finish: FinishToolCalls}, {Kind: EventText, Index: 3, Text: "late"}, {Kind: EventDone}},
		"stray pieces": {{Kind: EventToolArgs, Index: 2, Text: "{}"}, {Kind: EventText, Index: 0, Text: "x"}, {Kind: EventToolArgs, Index: 0, Text: "{}"},
			{Kind: EventPartStop, Index: 0}, {Kind: EventText, Index: 0, Text: "closed"}, {Kind: EventPartStop, Index: 9}, {Kind: EventToolCall, Index: 0, ToolName: "again"},
			{Kind: EventUsage, Usage: routing.Usage{InputTokens: 3, OutputTokens: 2}}, {Kind: EventDone}, {Kind: EventText, Index: 5, Text: "after"}, {Kind: EventDone}},
		"only done": {{Kind: EventDone}},
	}
	for name, evs := range seqs {
		for _, c := range streamCallers {
			out, _ := encodeStream(t, c.ep, c.includeUsage, evs)
			s, err := c.check(out)
			if err != nil {
				t.Errorf("%s, %s: %v\n%s", name, c.name, err, out)
				continue
			}
			if strings.Contains(s.Text, "late") || strings.Contains(s.Text, "closed") || strings.Contains(s.Text, "after") {
				t.Errorf("%s, %s: stray text written: %q", name, c.name, s.Text)
			}
			for _, tl := range s.Tools {
				if tl.ID == "" {
					t.Errorf("%s, %s: tool call without id", name, c.name)
				}
			}
		}
	}
	// An unknown finish after tool calls reads as a tool call finish.
	out, _ := encodeStream(t, routing.EndpointMessages, false, []Event{{Kind: EventToolCall, ToolCallID: "t", ToolName: "f"}, {Kind: EventDone}})
	if s, err := checkMessagesStream(out, streamCallerModel); err != nil || s.Finish != "tool_use" {
		t.Errorf("finish %q, %v", s.Finish, err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("caller gone") }

// TestStreamErrorsPropagate: an error of emit or of the caller's writer
// is returned as is.
func TestStreamErrorsPropagate(t *testing.T) {
	stop := errors.New("stop")
	in := readStreamTranscript(t, "testdata/stream/anthropic/text.sse")
	if err := NewDecoder(routing.WireAnthropic).Decode(in[0].name, in[0].data, func(Event) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("emit error: %v", err)
	}
	for _, c := range streamCallers {
		if err := NewEncoder(c.ep, "m", true).Encode(Event{Kind: EventStart}, failWriter{}); err == nil || err.Error() != "caller gone" {
			t.Fatalf("%s: writer error %v", c.name, err)
		}
	}
}

// TestStreamKeptBound: the Responses encoder, which must repeat the whole
// answer at its end, refuses an answer over maxKept instead of growing
// without bound.
func TestStreamKeptBound(t *testing.T) {
	enc := NewEncoder(routing.EndpointResponses, "m", false)
	piece := strings.Repeat("x", 1<<20)
	var err error
	for i := 0; i < 40 && err == nil; i++ {
		err = enc.Encode(Event{Kind: EventText, Text: piece}, discard{})
	}
	if !errors.Is(err, errAnswerTooLarge) {
		t.Fatalf("err %v", err)
	}
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

// TestAppendJSONString: any Go string becomes one valid JSON string that
// reads back as the same text (invalid UTF-8 as U+FFFD).
func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\" back\\slash", "ctl\x00\x01\x1f\n\r\t", "bad\xff\xfeutf8", "é€😀", "\u2028\u2029", "<>&"} {
		b := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q → %s: %v", s, b, err)
		}
		var want strings.Builder
		for _, r := range s { // each invalid byte reads as one U+FFFD
			want.WriteRune(r)
		}
		if back != want.String() {
			t.Errorf("%q → %s → %q", s, b, back)
		}
	}
}

// Gemini's usage, whole or streamed, is read one way: cached tokens apart
// from the prompt and never more than it, negative counts as 0, sums
// saturating, whatever a hostile member sends.
func TestGeminiUsageOneReading(t *testing.T) {
	for _, tc := range []struct {
		u    gmUsage
		want routing.Usage
	}{
		{gmUsage{PromptTokenCount: 100, CachedContentTokenCount: 40, ToolUsePromptTokenCount: 5, CandidatesTokenCount: 7, ThoughtsTokenCount: 3},
			routing.Usage{InputTokens: 65, CacheReadTokens: 40, OutputTokens: 10}},
		{gmUsage{PromptTokenCount: 10, CachedContentTokenCount: 50}, routing.Usage{InputTokens: 0, CacheReadTokens: 10}},
		{gmUsage{PromptTokenCount: -5, CandidatesTokenCount: -1, CachedContentTokenCount: -9}, routing.Usage{}},
		{gmUsage{PromptTokenCount: math.MaxInt64, ToolUsePromptTokenCount: math.MaxInt64, CandidatesTokenCount: math.MaxInt64, ThoughtsTokenCount: 1},
			routing.Usage{InputTokens: math.MaxInt64, OutputTokens: math.MaxInt64}},
	} {
		if got := tc.u.usage(); got != tc.want {
			t.Errorf("%+v: %+v, want %+v", tc.u, got, tc.want)
		}
	}
}
