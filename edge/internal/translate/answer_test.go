package translate

import (
	"bytes"
	"encoding/json"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"weir.dev/routing"
)

var updateAns = flag.Bool("update-ans", false, "rewrite the whole-answer goldens in testdata/ans/out")

var ansWires = map[string]routing.WireFormat{
	"openai":    routing.WireOpenAI,
	"anthropic": routing.WireAnthropic,
	"bedrock":   routing.WireBedrock,
	"gemini":    routing.WireGemini,
}

var ansEndpoints = map[string]routing.Endpoint{
	"chat":      routing.EndpointChatCompletions,
	"responses": routing.EndpointResponses,
	"messages":  routing.EndpointMessages,
}

// TestAnswerGoldens_RFMT2 translates every member answer in
// testdata/ans/in/<wire>/ to every caller endpoint and compares with
// testdata/ans/out/<wire>/<case>.<endpoint>.json (R-FMT-2). Run with
// -update-ans to rewrite them.
func TestAnswerGoldens_RFMT2(t *testing.T) {
	n := 0
	for wname, w := range ansWires {
		ins, err := filepath.Glob(filepath.Join("testdata", "ans", "in", wname, "*.json"))
		if err != nil || len(ins) == 0 {
			t.Fatalf("no inputs for %s: %v", wname, err)
		}
		for _, in := range ins {
			body, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			a, err := DecodeAnswer(w, body)
			if err != nil {
				t.Errorf("%s: decode: %v", in, err)
				continue
			}
			name := strings.TrimSuffix(filepath.Base(in), ".json")
			for ename, ep := range ansEndpoints {
				out, err := EncodeAnswer(ep, a, "caller-model")
				if err != nil {
					t.Errorf("%s → %s: %v", in, ename, err)
					continue
				}
				var pretty bytes.Buffer
				if err := json.Indent(&pretty, out, "", "  "); err != nil {
					t.Errorf("%s → %s: invalid JSON: %v", in, ename, err)
					continue
				}
				pretty.WriteByte('\n')
				golden := filepath.Join("testdata", "ans", "out", wname, name+"."+ename+".json")
				n++
				if *updateAns {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Errorf("%s: %v (run with -update-ans)", golden, err)
					continue
				}
				if !bytes.Equal(pretty.Bytes(), want) {
					t.Errorf("%s differs:\n got: %s\nwant: %s", golden, pretty.Bytes(), want)
				}
			}
		}
	}
	if n < 3*4*4 {
		t.Errorf("only %d goldens", n)
	}
}

func textPart(s string) Part { return Part{Kind: PartText, Text: s} }

func callPart(id, name, args string) Part {
	return Part{Kind: PartToolCall, ToolCallID: id, ToolName: name, Arguments: json.RawMessage(args)}
}

// TestDecodeAnswer_RFMT2 checks what each member format's answer means in
// the neutral form: parts, finish reasons and usage with cached tokens
// moved out of the input count (R-FMT-2).
func TestDecodeAnswer_RFMT2(t *testing.T) {
	tests := []struct {
		name string
		wire routing.WireFormat
		file string
		want Answer
	}{
		{"openai cached tokens subtracted", routing.WireOpenAI, "openai/text.json", Answer{
			ID: "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", Model: "gpt-4.1-2025-04-14", Created: 1741569952,
			Parts: []Part{textPart("Hello! How can I help you today?")}, Finish: FinishStop,
			Usage: routing.Usage{InputTokens: 271, OutputTokens: 10, CacheReadTokens: 2048}}},
		{"openai one call, arguments compacted", routing.WireOpenAI, "openai/tool_one.json", Answer{
			ID: "chatcmpl-abc123", Model: "gpt-4o-mini", Created: 1699896916,
			Parts:  []Part{callPart("call_abc123", "get_current_weather", `{"location":"Boston, MA"}`)},
			Finish: FinishToolCalls, Usage: routing.Usage{InputTokens: 82, OutputTokens: 17}}},
		{"openai refusal is the text", routing.WireOpenAI, "openai/refusal.json", Answer{
			ID: "chatcmpl-ref1", Model: "gpt-4o", Created: 1733000003,
			Parts: []Part{textPart("I'm sorry, I can't help with that.")}, Finish: FinishStop,
			Usage: routing.Usage{InputTokens: 25, OutputTokens: 9}}},
		{"openai content filter", routing.WireOpenAI, "openai/content_filter.json", Answer{
			ID: "chatcmpl-cf1", Model: "gpt-4o", Created: 1733000002, Finish: FinishContentFilter,
			Usage: routing.Usage{InputTokens: 30}}},
		{"anthropic cache read and write", routing.WireAnthropic, "anthropic/text.json", Answer{
			ID: "msg_013Zva2CMHLNnXjNJJKqJ2EF", Model: "claude-sonnet-4-5-20250929",
			Parts: []Part{textPart("Hi! My name is Claude.")}, Finish: FinishStop,
			Usage: routing.Usage{InputTokens: 21, OutputTokens: 12, CacheReadTokens: 3000, CacheWriteTokens: 1500}}},
		{"anthropic thinking dropped, two calls", routing.WireAnthropic, "anthropic/tool_many.json", Answer{
			ID: "msg_01XFDUDYJgAACzvnptvVoYEL", Model: "claude-sonnet-4-5-20250929",
			Parts: []Part{textPart("I'll check both cities."), callPart("toolu_01", "lookup", `{"city":"Paris"}`),
				callPart("toolu_02", "lookup", `{}`)},
			Finish: FinishToolCalls, Usage: routing.Usage{InputTokens: 500, OutputTokens: 90}}},
		{"anthropic stop sequence", routing.WireAnthropic, "anthropic/stop_sequence.json", Answer{
			ID: "msg_stopseq", Model: "claude-3-5-haiku-20241022", Parts: []Part{textPart("1, 2, 3, 4")},
			Finish: FinishStopSequence, StopSequence: "5", Usage: routing.Usage{InputTokens: 15, OutputTokens: 10}}},
		{"anthropic refusal", routing.WireAnthropic, "anthropic/refusal.json", Answer{
			ID: "msg_refusal", Model: "claude-sonnet-4-5-20250929", Parts: []Part{textPart("I can't help with that.")},
			Finish: FinishContentFilter, Usage: routing.Usage{InputTokens: 40, OutputTokens: 7}}},
		{"bedrock cache write", routing.WireBedrock, "bedrock/text.json", Answer{
			ID: "msg_bdrk_01Xq7sPKj2fTu3mpRZnZ8cLV", Model: "claude-sonnet-4-5-20250929",
			Parts: []Part{textPart("Bonjour ! Comment puis-je vous aider ?")}, Finish: FinishStop,
			Usage: routing.Usage{InputTokens: 4, OutputTokens: 14, CacheWriteTokens: 2100}}},
		{"gemini thoughts dropped and counted, cache subtracted", routing.WireGemini, "gemini/text.json", Answer{
			ID: "mTkzaK-wDOWjvdIP0cvtiQo", Model: "gemini-2.5-flash",
			Parts: []Part{textPart("Hello there! How can I help?")}, Finish: FinishStop,
			Usage: routing.Usage{InputTokens: 200, OutputTokens: 109, CacheReadTokens: 4000}}},
		{"gemini STOP with a call is tool calls, ids made up", routing.WireGemini, "gemini/tool_one.json", Answer{
			ID: "Rz8zaL6JBo2FvdIPqvfQyAk", Model: "gemini-2.0-flash",
			Parts:  []Part{callPart("call_0", "set_light_values", `{"brightness":25,"color_temp":"warm"}`)},
			Finish: FinishToolCalls, Usage: routing.Usage{InputTokens: 118, OutputTokens: 21}}},
		{"gemini two calls, tool-use prompt is input", routing.WireGemini, "gemini/tool_many.json", Answer{
			ID: "resp-many-2", Model: "gemini-2.5-pro",
			Parts: []Part{textPart("Turning on both."), callPart("call_0", "power", `{"device":"lamp","on":true}`),
				callPart("call_1", "power", `{"device":"fan","on":true}`)},
			Finish: FinishToolCalls, Usage: routing.Usage{InputTokens: 215, OutputTokens: 30}}},
		{"gemini MAX_TOKENS", routing.WireGemini, "gemini/length.json", Answer{
			ID: "len-3", Model: "gemini-2.5-flash", Parts: []Part{textPart("The first three prime numbers are 2, 3,")},
			Finish: FinishLength, Usage: routing.Usage{InputTokens: 11, OutputTokens: 10}}},
		{"gemini SAFETY without content", routing.WireGemini, "gemini/safety.json", Answer{
			ID: "safety-4", Model: "gemini-2.5-flash", Finish: FinishContentFilter, Usage: routing.Usage{InputTokens: 17}}},
		{"gemini RECITATION keeps its text", routing.WireGemini, "gemini/recitation.json", Answer{
			ID: "recit-5", Model: "gemini-2.5-flash", Parts: []Part{textPart("It was the best of times,")},
			Finish: FinishContentFilter, Usage: routing.Usage{InputTokens: 14, OutputTokens: 6}}},
		{"gemini blocked prompt", routing.WireGemini, "gemini/blocked.json", Answer{
			ID: "blocked-6", Model: "gemini-2.5-flash", Finish: FinishContentFilter, Usage: routing.Usage{InputTokens: 52}}},
		{"gemini malformed call is a stop", routing.WireGemini, "gemini/malformed_call.json", Answer{
			ID: "malformed-7", Model: "gemini-2.5-flash", Finish: FinishStop, Usage: routing.Usage{InputTokens: 90}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", "ans", "in", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeAnswer(tt.wire, body)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

// TestDecodeAnswerMalformed: bodies that are not the format's answer are
// errors, never a half-read answer.
func TestDecodeAnswerMalformed(t *testing.T) {
	tests := []struct {
		wire routing.WireFormat
		body string
	}{
		{routing.WireOpenAI, ``},
		{routing.WireOpenAI, `not json`},
		{routing.WireOpenAI, `[]`},
		{routing.WireOpenAI, `{"choices":[]}`},
		{routing.WireOpenAI, `{"choices":[{"finish_reason":"stop"}]}`},
		{routing.WireOpenAI, `{"choices":[{"message":{"content":42}}]}`},
		{routing.WireOpenAI, `{"choices":[{"message":{"tool_calls":[{"id":"x","function":{"arguments":"{}"}}]}}]}`},
		{routing.WireOpenAI, `{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":"many"}}`},
		{routing.WireAnthropic, `{}`},
		{routing.WireAnthropic, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		{routing.WireAnthropic, `{"type":"message","content":[{"type":"tool_use","id":"t","input":{}}]}`},
		{routing.WireBedrock, `{"content":"text"}`},
		{routing.WireGemini, `{}`},
		{routing.WireGemini, `{"candidates":[]}`},
		{routing.WireGemini, `{"candidates":[{"content":{"parts":[{"functionCall":{"args":{}}}]}}]}`},
		{routing.WireGemini, `{"error":{"code":429,"message":"Resource exhausted","status":"RESOURCE_EXHAUSTED"}}`},
		{routing.WireUnknown, `{"choices":[{"message":{"content":"hi"}}]}`},
	}
	for _, tt := range tests {
		if a, err := DecodeAnswer(tt.wire, []byte(tt.body)); err == nil {
			t.Errorf("%v %s: decoded %+v, want an error", tt.wire, tt.body, a)
		}
	}
}

// TestDecodeOpenAIArguments: arguments given as an object are kept; text
// that is not JSON (a call cut by the output cap) is carried as a JSON
// string and written back as the same text.
func TestDecodeOpenAIArguments(t *testing.T) {
	body := `{"choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":{"x": 1}}},{"id":"b","function":{"name":"g","arguments":"{\"cut\": \"mid"}}]},"finish_reason":"length"}]}`
	a, err := DecodeAnswer(routing.WireOpenAI, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if string(a.Parts[0].Arguments) != `{"x":1}` {
		t.Errorf("object arguments: %s", a.Parts[0].Arguments)
	}
	if string(a.Parts[1].Arguments) != `"{\"cut\": \"mid"` {
		t.Errorf("cut arguments: %s", a.Parts[1].Arguments)
	}
	out, err := EncodeAnswer(routing.EndpointChatCompletions, a, "m")
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeAnswer(routing.WireOpenAI, out)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Parts, a.Parts) || back.Finish != FinishLength {
		t.Errorf("round trip: %+v", back)
	}
}

// TestAnswerRoundTrip_RFMT2: encoding an answer to a caller endpoint and
// decoding it as the member format of the same shape gives the answer back
// (chat ↔ openai, messages ↔ anthropic and bedrock), except for what the
// encoder documents as lossy.
func TestAnswerRoundTrip_RFMT2(t *testing.T) {
	answers := []Answer{
		{Parts: []Part{textPart("hello")}, Finish: FinishStop, Usage: routing.Usage{InputTokens: 3, OutputTokens: 1}},
		{Parts: []Part{callPart("call_x", "f", `{"a":[1,2,{"b":null}]}`)}, Finish: FinishToolCalls,
			Usage: routing.Usage{InputTokens: 10, OutputTokens: 4, CacheReadTokens: 1024}},
		{Parts: []Part{textPart("a"), callPart("c1", "f", `{}`), callPart("c2", "g", `{"q":"ü\"<>"}`)}, Finish: FinishToolCalls},
		{Parts: []Part{textPart("cut")}, Finish: FinishLength, Usage: routing.Usage{OutputTokens: 100}},
		{Finish: FinishContentFilter},
		{Parts: []Part{textPart("x</s")}, Finish: FinishStopSequence, StopSequence: "</stop>"},
		{Parts: []Part{textPart("cached")}, Finish: FinishStop,
			Usage: routing.Usage{InputTokens: 5, OutputTokens: 2, CacheReadTokens: 7, CacheWriteTokens: 9}},
	}
	for i, orig := range answers {
		// Chat Completions: ids get the prefix, stop sequences read as
		// stop, cache writes count as input.
		orig.ID, orig.Model, orig.Created = "chatcmpl-"+string(rune('a'+i)), "m", 1700000000
		out, err := EncodeAnswer(routing.EndpointChatCompletions, &orig, "m")
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeAnswer(routing.WireOpenAI, out)
		if err != nil {
			t.Fatalf("%d: %v in %s", i, err, out)
		}
		want := orig
		if want.Finish == FinishStopSequence {
			want.Finish, want.StopSequence = FinishStop, ""
		}
		want.Usage.InputTokens += want.Usage.CacheWriteTokens
		want.Usage.CacheWriteTokens = 0
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("chat %d:\n got  %+v\n want %+v\n via %s", i, *got, want, out)
		}

		for _, w := range []routing.WireFormat{routing.WireAnthropic, routing.WireBedrock} {
			orig.ID, orig.Created = "msg_"+string(rune('a'+i)), 0
			out, err = EncodeAnswer(routing.EndpointMessages, &orig, "m")
			if err != nil {
				t.Fatal(err)
			}
			got, err = DecodeAnswer(w, out)
			if err != nil {
				t.Fatalf("%d: %v in %s", i, err, out)
			}
			if !reflect.DeepEqual(*got, orig) {
				t.Errorf("messages %d (%v):\n got  %+v\n want %+v\n via %s", i, w, *got, orig, out)
			}
		}
	}
}

// TestEncodeAnswerShapes_RFMT2 checks the fields callers' SDKs read.
func TestEncodeAnswerShapes_RFMT2(t *testing.T) {
	a := &Answer{Parts: []Part{callPart("", "f", `{"k":1}`)}, Finish: FinishToolCalls,
		Usage: routing.Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 20, CacheWriteTokens: 30}}
	var chat struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Role      string          `json:"role"`
				Content   json.RawMessage `json:"content"`
				ToolCalls []struct {
					ID, Type string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens, CompletionTokens, TotalTokens int64 `json:",omitempty"`
		} `json:"-"`
	}
	out, err := EncodeAnswer(routing.EndpointChatCompletions, a, "my-model")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &chat); err != nil {
		t.Fatal(err)
	}
	m := chat.Choices[0].Message
	if !strings.HasPrefix(chat.ID, "chatcmpl-weir") || chat.Object != "chat.completion" || chat.Model != "my-model" ||
		m.Role != "assistant" || string(m.Content) != "null" || len(m.ToolCalls) != 1 ||
		m.ToolCalls[0].ID != "call_0" || m.ToolCalls[0].Type != "function" || m.ToolCalls[0].Function.Arguments != `{"k":1}` ||
		chat.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("chat answer: %s", out)
	}
	if !bytes.Contains(out, []byte(`"usage":{"prompt_tokens":60,"completion_tokens":5,"total_tokens":65,"prompt_tokens_details":{"cached_tokens":20}}`)) {
		t.Errorf("chat usage: %s", out)
	}
	again, _ := EncodeAnswer(routing.EndpointChatCompletions, a, "my-model")
	if !bytes.Equal(out, again) {
		t.Errorf("not deterministic: %s vs %s", out, again)
	}

	out, err = EncodeAnswer(routing.EndpointResponses, &Answer{ID: "abc", Parts: []Part{textPart("partial")}, Finish: FinishLength,
		Usage: routing.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3}}, "r")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"id":"resp_abc"`, `"object":"response"`, `"status":"incomplete"`, `"incomplete_details":{"reason":"max_output_tokens"}`,
		`"type":"output_text","text":"partial","annotations":[]`, `"input_tokens":4,"input_tokens_details":{"cached_tokens":3},"output_tokens":2`, `"total_tokens":6`} {
		if !bytes.Contains(out, []byte(s)) {
			t.Errorf("responses answer lacks %s: %s", s, out)
		}
	}

	out, err = EncodeAnswer(routing.EndpointMessages, &Answer{ID: "msg_1", Parts: []Part{textPart("x")}, Finish: FinishStopSequence, StopSequence: "END",
		Usage: routing.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4}}, "claude")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"id":"msg_1"`, `"type":"message"`, `"role":"assistant"`, `"model":"claude"`, `"stop_reason":"stop_sequence"`, `"stop_sequence":"END"`,
		`"usage":{"input_tokens":1,"cache_creation_input_tokens":4,"cache_read_input_tokens":3,"output_tokens":2}`} {
		if !bytes.Contains(out, []byte(s)) {
			t.Errorf("messages answer lacks %s: %s", s, out)
		}
	}
}

// TestEncodeAnswerRefuses: what cannot be written is an error, not a
// broken body.
func TestEncodeAnswerRefuses(t *testing.T) {
	bad := []*Answer{
		nil,
		{Parts: []Part{callPart("c", "", `{}`)}},
		{Parts: []Part{callPart("c", "f", `{"x":`)}},
	}
	for _, a := range bad {
		if out, err := EncodeAnswer(routing.EndpointChatCompletions, a, "m"); err == nil {
			t.Errorf("%+v: encoded %s", a, out)
		}
	}
	if _, err := EncodeAnswer(routing.EndpointEmbeddings, &Answer{}, "m"); err == nil {
		t.Error("embeddings endpoint accepted")
	}
}

// TestFinishEdges_RFMT2: the less common finish reasons and ids.
func TestFinishEdges_RFMT2(t *testing.T) {
	tests := []struct {
		wire   routing.WireFormat
		body   string
		finish Finish
		callID string
	}{
		{routing.WireAnthropic, `{"type":"message","content":[{"type":"text","text":"searching"}],"stop_reason":"pause_turn"}`, FinishStop, ""},
		{routing.WireAnthropic, `{"type":"message","content":[{"type":"text","text":"x"}],"stop_reason":"model_context_window_exceeded"}`, FinishLength, ""},
		{routing.WireAnthropic, `{"type":"message","content":[],"stop_reason":"something_new"}`, FinishUnknown, ""},
		{routing.WireOpenAI, `{"choices":[{"message":{"content":"x"},"finish_reason":"function_call"}]}`, FinishToolCalls, ""},
		{routing.WireOpenAI, `{"choices":[{"message":{"content":"x"},"finish_reason":null}]}`, FinishUnknown, ""},
		{routing.WireOpenAI, `{"choices":[{"message":{"content":[{"type":"text","text":"x"}],"tool_calls":[{"id":"c9","function":{"name":"f","arguments":""}}]},"finish_reason":"stop"}]}`, FinishToolCalls, "c9"},
		{routing.WireGemini, `{"candidates":[{"content":{"parts":[{"functionCall":{"id":"gem-id-1","name":"f","args":{}}}]},"finishReason":"STOP"}]}`, FinishToolCalls, "gem-id-1"},
		{routing.WireGemini, `{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"IMAGE_SAFETY"}]}`, FinishContentFilter, ""},
		{routing.WireGemini, `{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"OTHER"}]}`, FinishStop, ""},
	}
	for _, tt := range tests {
		a, err := DecodeAnswer(tt.wire, []byte(tt.body))
		if err != nil {
			t.Errorf("%s: %v", tt.body, err)
			continue
		}
		if a.Finish != tt.finish {
			t.Errorf("%s: finish %d, want %d", tt.body, a.Finish, tt.finish)
		}
		if tt.callID != "" && (len(a.Parts) == 0 || a.Parts[len(a.Parts)-1].ToolCallID != tt.callID) {
			t.Errorf("%s: parts %+v", tt.body, a.Parts)
		}
	}

	// An unknown finish on an answer with tool calls reads as tool calls;
	// an empty model names the member's.
	a := &Answer{Model: "member-model", Parts: []Part{callPart("c", "f", `{}`)}}
	for ep, want := range map[routing.Endpoint]string{
		routing.EndpointChatCompletions: `"finish_reason":"tool_calls"`,
		routing.EndpointMessages:        `"stop_reason":"tool_use"`,
	} {
		out, err := EncodeAnswer(ep, a, "")
		if err != nil || !strings.Contains(string(out), want) || !strings.Contains(string(out), `"model":"member-model"`) {
			t.Errorf("%v: %s %v", ep, out, err)
		}
	}
	if a.Finish != FinishUnknown {
		t.Error("EncodeAnswer changed its argument")
	}
	out, _ := EncodeAnswer(routing.EndpointMessages, &Answer{}, "m")
	if !strings.Contains(string(out), `"stop_reason":"end_turn"`) || !strings.Contains(string(out), `"content":[]`) {
		t.Errorf("empty answer: %s", out)
	}
}

// TestEncodeAnswerHugeUsage: counts near the int64 limit saturate instead
// of wrapping negative.
func TestEncodeAnswerHugeUsage(t *testing.T) {
	const max = 1<<63 - 1
	out, err := EncodeAnswer(routing.EndpointChatCompletions, &Answer{Usage: routing.Usage{InputTokens: max, OutputTokens: max, CacheReadTokens: 5}}, "m")
	if err != nil || !strings.Contains(string(out), `"prompt_tokens":9223372036854775807,"completion_tokens":9223372036854775807,"total_tokens":9223372036854775807`) {
		t.Errorf("%s %v", out, err)
	}
}

// randomAnswer makes an answer of the shape members give: non-empty texts
// and tool calls with ids and compact JSON object arguments.
func randomAnswer(r *rand.Rand) Answer {
	words := []string{"a", "ü", "<b>", `"q"`, "\\", "\n", "€", "x y", "\u2028", "😀"}
	str := func() string {
		var b strings.Builder
		for range 1 + r.IntN(4) {
			b.WriteString(words[r.IntN(len(words))])
		}
		return b.String()
	}
	var a Answer
	for i := range r.IntN(5) {
		if r.IntN(2) == 0 {
			a.Parts = append(a.Parts, textPart(str()))
			continue
		}
		args := map[string]any{}
		for range r.IntN(3) {
			args[str()] = []any{str(), r.IntN(100), nil, true}
		}
		raw, _ := json.Marshal(args)
		a.Parts = append(a.Parts, callPart("call_"+strconv.Itoa(i)+str(), "fn_"+strconv.Itoa(r.IntN(3)), string(raw)))
	}
	a.Finish = []Finish{FinishStop, FinishLength, FinishToolCalls, FinishStopSequence, FinishContentFilter}[r.IntN(5)]
	if a.Finish == FinishStopSequence {
		a.StopSequence = str()
	}
	if a.Finish == FinishStop && hasToolCalls(a.Parts) {
		a.Finish = FinishToolCalls // what every decoder makes of it
	}
	a.Usage = routing.Usage{InputTokens: r.Int64N(1e6), OutputTokens: r.Int64N(1e5), CacheReadTokens: r.Int64N(1e6), CacheWriteTokens: r.Int64N(1e6)}
	return a
}

// TestAnswerRoundTripProperty_RFMT2: for random answers, Messages encoding
// decodes back to the same answer, and Chat Completions encoding to the
// same answer up to what it documents as lossy (texts joined before the
// calls, stop sequence read as stop, cache writes counted as input).
func TestAnswerRoundTripProperty_RFMT2(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 2))
	for i := range 2000 {
		a := randomAnswer(r)
		a.Model = "m"

		m := a
		m.ID = "msg_" + strconv.Itoa(i)
		out, err := EncodeAnswer(routing.EndpointMessages, &m, "m")
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeAnswer(routing.WireAnthropic, out)
		if err != nil {
			t.Fatalf("%v in %s", err, out)
		}
		if !reflect.DeepEqual(*got, m) {
			t.Fatalf("messages:\n got  %+v\n want %+v\n via %s", *got, m, out)
		}

		c := a
		c.ID, c.Created = "chatcmpl-"+strconv.Itoa(i), int64(i)
		out, err = EncodeAnswer(routing.EndpointChatCompletions, &c, "m")
		if err != nil {
			t.Fatal(err)
		}
		got, err = DecodeAnswer(routing.WireOpenAI, out)
		if err != nil {
			t.Fatalf("%v in %s", err, out)
		}
		want := c
		want.Parts = nil
		var text strings.Builder
		for _, p := range c.Parts {
			if p.Kind == PartText {
				text.WriteString(p.Text)
			}
		}
		if text.Len() > 0 {
			want.Parts = append(want.Parts, textPart(text.String()))
		}
		for _, p := range c.Parts {
			if p.Kind == PartToolCall {
				want.Parts = append(want.Parts, p)
			}
		}
		if want.Finish == FinishStopSequence {
			want.Finish, want.StopSequence = FinishStop, ""
			if hasToolCalls(want.Parts) {
				want.Finish = FinishToolCalls
			}
		}
		want.Usage.InputTokens += want.Usage.CacheWriteTokens
		want.Usage.CacheWriteTokens = 0
		if !reflect.DeepEqual(*got, want) {
			t.Fatalf("chat:\n got  %+v\n want %+v\n via %s", *got, want, out)
		}
	}
}
