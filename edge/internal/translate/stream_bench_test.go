package translate

import (
	"fmt"
	"testing"

	"weir.dev/routing"
)

// benchAnthropicStream is a 200-event Anthropic stream: start, one text
// block of 195 deltas, stop, message_delta, message_stop.
func benchAnthropicStream() []streamMemberEvent {
	ev := func(name, data string) streamMemberEvent { return streamMemberEvent{name, []byte(data)} }
	out := []streamMemberEvent{
		ev("message_start", `{"type":"message_start","message":{"id":"msg_bench","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1500,"cache_creation_input_tokens":0,"cache_read_input_tokens":4000,"output_tokens":1}}}`),
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
	}
	for i := 0; len(out) < 197; i++ {
		out = append(out, ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"token %d of a \"quoted\" answer, "}}`, i)))
	}
	return append(out,
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":600}}`),
		ev("message_stop", `{"type":"message_stop"}`))
}

// BenchmarkStream: a 200-event Anthropic stream translated for a Chat
// Completions caller with usage, per whole stream.
func BenchmarkStream(b *testing.B) {
	in := benchAnthropicStream()
	if len(in) != 200 {
		b.Fatalf("%d events", len(in))
	}
	b.ReportAllocs()
	for b.Loop() {
		d := NewDecoder(routing.WireAnthropic)
		e := NewEncoder(routing.EndpointChatCompletions, "my-model", true)
		emit := func(ev Event) error { return e.Encode(ev, discard{}) }
		for _, m := range in {
			if err := d.Decode(m.name, m.data, emit); err != nil {
				b.Fatal(err)
			}
		}
	}
}
