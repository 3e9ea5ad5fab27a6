package translate

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"weir.dev/edge/internal/wire"
	"weir.dev/routing"
)

var updateStream = flag.Bool("update-stream", false, "rewrite the streamGolden files under testdata/stream/*/out")

const streamCallerModel = "my-model"

// streamMemberEvent is one event of a member's stream as the translated adapter
// hands it to a Decoder.
type streamMemberEvent struct {
	name string
	data []byte
}

// readStreamTranscript reads a member's SSE transcript the way the adapter does.
func readStreamTranscript(t testing.TB, path string) []streamMemberEvent {
	t.Helper()
	f, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rd := wire.NewSSEReader(bytes.NewReader(f))
	var out []streamMemberEvent
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, streamMemberEvent{ev.Name, bytes.Clone(ev.Data)})
	}
}

// decodeStream runs a member's events through a fresh Decoder.
func decodeStream(w routing.WireFormat, in []streamMemberEvent) ([]Event, error) {
	d := NewDecoder(w)
	var evs []Event
	for _, m := range in {
		if err := d.Decode(m.name, m.data, func(e Event) error { evs = append(evs, e); return nil }); err != nil {
			return evs, err
		}
	}
	return evs, nil
}

// encodeStream writes events with a fresh Encoder, checking that each Encode
// writes at once (no later call is needed to see its bytes).
func encodeStream(t testing.TB, ep routing.Endpoint, includeUsage bool, evs []Event) ([]byte, routing.Usage) {
	t.Helper()
	enc := NewEncoder(ep, streamCallerModel, includeUsage)
	var out bytes.Buffer
	for _, e := range evs {
		if err := enc.Encode(e, &out); err != nil {
			t.Fatalf("encode %+v: %v", e, err)
		}
	}
	return out.Bytes(), enc.Usage()
}

func evString(e Event) string {
	u := fmt.Sprintf("usage=%d/%d/%d/%d", e.Usage.InputTokens, e.Usage.OutputTokens, e.Usage.CacheReadTokens, e.Usage.CacheWriteTokens)
	switch e.Kind {
	case EventStart:
		return fmt.Sprintf("start id=%q model=%q %s", e.ID, e.Model, u)
	case EventText:
		return fmt.Sprintf("text %d %q", e.Index, e.Text)
	case EventToolCall:
		return fmt.Sprintf("tool_call %d id=%q name=%q", e.Index, e.ToolCallID, e.ToolName)
	case EventToolArgs:
		return fmt.Sprintf("tool_args %d %q", e.Index, e.Text)
	case EventPartStop:
		return fmt.Sprintf("part_stop %d", e.Index)
	case EventFinish:
		return fmt.Sprintf("finish %d seq=%q %s", e.Finish, e.StopSequence, u)
	case EventUsage:
		return "usage " + u
	case EventDone:
		return "done " + u
	}
	return fmt.Sprintf("kind %d", e.Kind)
}

// streamWant is what a member transcript says, read by hand from the file.
type streamWant struct {
	text   string
	tools  []streamTool
	finish Finish
	seq    string
	usage  routing.Usage
}

var (
	streamWeather     = streamTool{"call_abc", "get_weather", `{"city":"Paris"}`}
	streamMixedOpenAI = []streamTool{{"call_1", "get_weather", `{"city":"Oslo"}`}, {"call_2", "get_time", `{"tz":"CET"}`}}
	streamMixedClaude = []streamTool{{"toolu_1", "get_weather", `{"city":"Oslo"}`}, {"toolu_2", "get_time", `{}`}}
	streamMixedGemini = []streamTool{{"call_0", "get_weather", `{"city":"Oslo"}`}, {"call_1", "get_time", `{}`}}
	streamHello       = "Hello, \"wörld\"\n"
	streamWants       = map[string]streamWant{
		"openai/text":           {text: streamHello, finish: FinishStop, usage: routing.Usage{InputTokens: 176, OutputTokens: 5, CacheReadTokens: 1024}},
		"openai/tool":           {tools: []streamTool{streamWeather}, finish: FinishToolCalls, usage: routing.Usage{InputTokens: 80, OutputTokens: 17}},
		"openai/mixed_parallel": {text: "Checking both.", tools: streamMixedOpenAI, finish: FinishToolCalls, usage: routing.Usage{InputTokens: 44, OutputTokens: 40, CacheReadTokens: 256}},
		"openai/length":         {text: "Once upon a", finish: FinishLength, usage: routing.Usage{InputTokens: 10, OutputTokens: 3}},
		"openai/content_filter": {finish: FinishContentFilter, usage: routing.Usage{InputTokens: 12}},
		"openai/no_usage":       {text: "Hi", finish: FinishStop},

		"anthropic/text":           {text: streamHello, finish: FinishStop, usage: routing.Usage{InputTokens: 25, OutputTokens: 6, CacheReadTokens: 2000, CacheWriteTokens: 100}},
		"anthropic/tool":           {tools: []streamTool{{"toolu_01A", "get_weather", `{"city": "Paris"}`}}, finish: FinishToolCalls, usage: routing.Usage{InputTokens: 400, OutputTokens: 30}},
		"anthropic/mixed_thinking": {text: "Checking both.", tools: streamMixedClaude, finish: FinishToolCalls, usage: routing.Usage{InputTokens: 500, OutputTokens: 52, CacheReadTokens: 300}},
		"anthropic/length":         {text: "Once upon a", finish: FinishLength, usage: routing.Usage{InputTokens: 10, OutputTokens: 3}},
		"anthropic/stop_sequence":  {text: "1, 2, 3", finish: FinishStopSequence, seq: "END", usage: routing.Usage{InputTokens: 10, OutputTokens: 7}},
		"anthropic/refusal":        {finish: FinishContentFilter, usage: routing.Usage{InputTokens: 10, OutputTokens: 1}},

		"bedrock/text":           {text: "Hello", finish: FinishStop, usage: routing.Usage{InputTokens: 25, OutputTokens: 6, CacheReadTokens: 2000, CacheWriteTokens: 100}},
		"bedrock/mixed_thinking": {text: "Checking both.", tools: streamMixedClaude, finish: FinishToolCalls, usage: routing.Usage{InputTokens: 500, OutputTokens: 52, CacheReadTokens: 300}},

		"gemini/text":           {text: streamHello, finish: FinishStop, usage: routing.Usage{InputTokens: 176, OutputTokens: 5, CacheReadTokens: 1024}},
		"gemini/tool":           {tools: []streamTool{{"call_0", "get_weather", `{"city":"Paris"}`}}, finish: FinishToolCalls, usage: routing.Usage{InputTokens: 80, OutputTokens: 17}},
		"gemini/mixed_thinking": {text: "Checking both.", tools: streamMixedGemini, finish: FinishToolCalls, usage: routing.Usage{InputTokens: 44, OutputTokens: 40, CacheReadTokens: 256}},
		"gemini/length":         {text: "Once upon a", finish: FinishLength, usage: routing.Usage{InputTokens: 10, OutputTokens: 3}},
		"gemini/safety":         {text: "I can", finish: FinishContentFilter, usage: routing.Usage{InputTokens: 12, OutputTokens: 2}},
		"gemini/prompt_blocked": {finish: FinishContentFilter, usage: routing.Usage{InputTokens: 12}},
	}
	streamWires = map[string]routing.WireFormat{
		"openai": routing.WireOpenAI, "anthropic": routing.WireAnthropic,
		"bedrock": routing.WireBedrock, "gemini": routing.WireGemini,
	}
)

// The R-FMT-2 finish reason table, as each caller format says it (the same
// table the whole-answer translation follows).
var (
	streamChatFinishWant = map[Finish]string{FinishStop: "stop", FinishLength: "length",
		FinishToolCalls: "tool_calls", FinishStopSequence: "stop", FinishContentFilter: "content_filter"}
	streamMessagesFinishWant = map[Finish]string{FinishStop: "end_turn", FinishLength: "max_tokens",
		FinishToolCalls: "tool_use", FinishStopSequence: "stop_sequence", FinishContentFilter: "refusal"}
	streamResponsesFinishWant = map[Finish]string{FinishStop: "completed", FinishLength: "incomplete:max_output_tokens",
		FinishToolCalls: "completed", FinishStopSequence: "completed", FinishContentFilter: "incomplete:content_filter"}
)

// streamCaller is one caller stream produced by the goldens.
type streamCaller struct {
	name         string
	ep           routing.Endpoint
	includeUsage bool
}

var streamCallers = []streamCaller{
	{"chat", routing.EndpointChatCompletions, false},
	{"chat_usage", routing.EndpointChatCompletions, true},
	{"responses", routing.EndpointResponses, false},
	{"messages", routing.EndpointMessages, false},
}

// check reads a produced caller stream back with its format's checker.
func (c streamCaller) check(b []byte) (streamSummary, error) {
	switch c.ep {
	case routing.EndpointChatCompletions:
		return checkChatStream(b, streamCallerModel, c.includeUsage)
	case routing.EndpointResponses:
		return checkResponsesStream(b, streamCallerModel)
	}
	return checkMessagesStream(b, streamCallerModel)
}

// wantSummary is what caller c must read from a member answer w.
func (c streamCaller) wantSummary(w streamWant) streamSummary {
	s := streamSummary{Text: w.text, Tools: w.tools, HasUsage: true,
		Input:  w.usage.InputTokens + w.usage.CacheReadTokens + w.usage.CacheWriteTokens,
		Output: w.usage.OutputTokens, CacheRead: w.usage.CacheReadTokens}
	switch c.ep {
	case routing.EndpointChatCompletions:
		s.Finish = streamChatFinishWant[w.finish]
		if !c.includeUsage {
			s.HasUsage, s.Input, s.Output, s.CacheRead = false, 0, 0, 0
		}
	case routing.EndpointResponses:
		s.Finish = streamResponsesFinishWant[w.finish]
	case routing.EndpointMessages:
		s.Finish = streamMessagesFinishWant[w.finish]
		s.Seq = w.seq
		s.Input, s.CacheWrite = w.usage.InputTokens, w.usage.CacheWriteTokens
	}
	return s
}

func streamGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *updateStream {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update-stream)", err)
	}
	if !bytes.Equal(old, got) {
		t.Errorf("%s differs from the streamGolden (run with -update-stream to accept):\n got: %s\nwant: %s", path, got, old)
	}
}

// TestStreamGolden (R-FMT-2, R-FAIL-11): every member transcript under
// testdata/stream/<wire>/ is decoded (the neutral events are a streamGolden too)
// and encoded for every caller format; each caller stream is a streamGolden, is
// read back by a checker enforcing its format's event order, and must say
// the text, the tool calls (ids, names, arguments), the finish reason and
// the usage (cached tokens included) the member said.
func TestStreamGolden(t *testing.T) {
	seen := 0
	for dir, w := range streamWires {
		files, err := filepath.Glob(filepath.Join("testdata", "stream", dir, "*.sse"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".sse")
			key := dir + "/" + name
			wt, ok := streamWants[key]
			if !ok {
				t.Errorf("%s: no streamWant", key)
				continue
			}
			seen++
			t.Run(key, func(t *testing.T) {
				evs, err := decodeStream(w, readStreamTranscript(t, f))
				if err != nil {
					t.Fatal(err)
				}
				var lines strings.Builder
				for _, e := range evs {
					lines.WriteString(evString(e) + "\n")
				}
				streamGolden(t, filepath.Join("testdata", "stream", dir, "out", name+".events"), []byte(lines.String()))
				checkStreamEventOrder(t, evs)
				for _, c := range streamCallers {
					out, u := encodeStream(t, c.ep, c.includeUsage, evs)
					streamGolden(t, filepath.Join("testdata", "stream", dir, "out", name+"."+c.name+".sse"), out)
					if u != wt.usage {
						t.Errorf("%s: Usage() = %+v, streamWant %+v", c.name, u, wt.usage)
					}
					got, err := c.check(out)
					if err != nil {
						t.Errorf("%s: invalid stream: %v\n%s", c.name, err, out)
						continue
					}
					got.ID = ""
					if wantS := c.wantSummary(wt); fmt.Sprint(got) != fmt.Sprint(wantS) {
						t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, wantS)
					}
				}
			})
		}
	}
	if seen != len(streamWants) {
		t.Errorf("%d transcripts for %d wants", seen, len(streamWants))
	}
}

// checkStreamEventOrder holds a decoded sequence to the Decoder's promises:
// start first, done last, parts numbered in order without gap, pieces only
// inside an open part of their kind, every part closed before the finish.
func checkStreamEventOrder(t testing.TB, evs []Event) {
	t.Helper()
	if len(evs) == 0 || evs[0].Kind != EventStart || evs[len(evs)-1].Kind != EventDone {
		t.Fatalf("not start…done: %v", evs)
	}
	checkStreamEventPrefix(t, evs)
	if evs[len(evs)-2].Kind != EventFinish && evs[len(evs)-2].Kind != EventUsage {
		t.Fatalf("no finish")
	}
}

// checkStreamEventPrefix holds a decoded sequence, complete or not, to the
// Decoder's promises.
func checkStreamEventPrefix(t testing.TB, evs []Event) {
	t.Helper()
	for i, e := range evs {
		if (i == 0) != (e.Kind == EventStart) {
			t.Fatalf("start out of place: %s at %d", evString(e), i)
		}
		if e.Kind == EventDone && i != len(evs)-1 {
			t.Fatalf("events after done")
		}
	}
	if len(evs) == 0 {
		return
	}
	end := len(evs)
	if evs[end-1].Kind == EventDone {
		end--
	}
	type part struct{ tool, stop bool }
	var parts []part
	finished := false
	for _, e := range evs[1:end] {
		switch e.Kind {
		case EventText, EventToolCall, EventToolArgs, EventPartStop:
			if finished {
				t.Fatalf("%s after the finish", evString(e))
			}
			isNew := e.Index == len(parts)
			if isNew && (e.Kind == EventText || e.Kind == EventToolCall) {
				parts = append(parts, part{tool: e.Kind == EventToolCall})
				continue
			}
			if e.Index < 0 || e.Index >= len(parts) || parts[e.Index].stop || e.Kind == EventToolCall {
				t.Fatalf("%s: no open part %d", evString(e), e.Index)
			}
			p := &parts[e.Index]
			switch {
			case e.Kind == EventPartStop:
				p.stop = true
			case p.tool != (e.Kind == EventToolArgs):
				t.Fatalf("%s: piece of the wrong kind", evString(e))
			}
		case EventFinish:
			for i, p := range parts {
				if !p.stop {
					t.Fatalf("finish with part %d open", i)
				}
			}
			finished = true
		case EventUsage:
			if !finished {
				t.Fatalf("usage before the finish")
			}
		default:
			t.Fatalf("%s in the middle", evString(e))
		}
	}
	if end < len(evs) && !finished {
		t.Fatalf("done without finish")
	}
}
