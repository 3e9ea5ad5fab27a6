package translate

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"weir.dev/edge/internal/wire"
	"weir.dev/routing"
)

// FuzzDecoder (run with -tags nosdk, see stream_sdk_test.go): any member transcript, read as SSE events, decoded by the
// decoder of any wire format: no panic; the events yielded keep the
// Decoder's promises (as far as they go); fed to every Encoder, with an
// EventDone added when the member never ended, they give a stream the
// caller format's checker accepts.
func FuzzDecoder(f *testing.F) {
	for i, dir := range []string{"openai", "anthropic", "bedrock", "gemini"} {
		files, _ := filepath.Glob(filepath.Join("testdata", "stream", dir, "*.sse"))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(uint8(i), b)
		}
	}
	f.Add(uint8(1), []byte("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":5,\"content_block\":{\"type\":\"tool_use\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":5,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n"))
	f.Add(uint8(0), []byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3,\"function\":{\"arguments\":\"{\"}},{\"index\":3,\"id\":\"a\"}]},\"finish_reason\":\"length\"}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"late\"}}]}\n\ndata: [DONE]\n\n"))
	f.Add(uint8(3), []byte("data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\",\"args\":null}},{\"text\":\"\\u0000\\ud800\"}]},\"finishReason\":\"BOGUS\"}]}\n\n"))
	f.Fuzz(func(t *testing.T, w uint8, transcript []byte) {
		d := NewDecoder(fuzzWires[int(w)%len(fuzzWires)])
		rd := wire.NewSSEReader(bytes.NewReader(transcript))
		var evs []Event
		for n := 0; n < 500; n++ {
			ev, err := rd.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, wire.ErrEventTooLarge) {
					t.Fatalf("sse: %v", err)
				}
				break
			}
			if d.Decode(ev.Name, ev.Data, func(e Event) error { evs = append(evs, e); return nil }) != nil {
				break
			}
		}
		checkStreamEventPrefix(t, evs)
		if len(evs) == 0 || evs[len(evs)-1].Kind != EventDone {
			evs = append(evs, Event{Kind: EventDone})
		}
		for _, c := range streamCallers {
			enc := NewEncoder(c.ep, "m", c.includeUsage)
			var out bytes.Buffer
			for _, e := range evs {
				if err := enc.Encode(e, &out); err != nil {
					t.Fatalf("%s: encode: %v", c.name, err)
				}
			}
			var err error
			switch c.ep {
			case routing.EndpointChatCompletions:
				_, err = checkChatStream(out.Bytes(), "m", c.includeUsage)
			case routing.EndpointResponses:
				_, err = checkResponsesStream(out.Bytes(), "m")
			default:
				_, err = checkMessagesStream(out.Bytes(), "m")
			}
			if err != nil {
				t.Fatalf("%s: invalid stream: %v\n%s", c.name, err, out.Bytes())
			}
		}
	})
}
