package wire

import (
	"maps"
	"net/http"
	"slices"
	"testing"

	"weir.dev/routing"
)

// startOut is an Out that records what Start got; fromOut adds StartFrom
// as the gateway's out does it (AnswerHeaders into its own header).
type startOut struct{ h http.Header }

func (o *startOut) Start(_ int, h http.Header) {
	o.h = http.Header{}
	maps.Copy(o.h, h)
}
func (*startOut) Write(p []byte) (int, error) { return len(p), nil }
func (*startOut) Flush()                      {}
func (*startOut) Complete(routing.Usage)      {}

type fromOut struct{ startOut }

func (o *fromOut) StartFrom(_ int, up http.Header, sse bool) {
	o.h = http.Header{}
	AnswerHeaders(o.h, up, sse)
}

func TestStartFromSameHeaders(t *testing.T) {
	up := http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"r1", "r2"}, "Openai-Processing-Ms": {"12"}, "Set-Cookie": {"no"}}
	for _, sse := range []bool{false, true} {
		var a startOut
		var b fromOut
		StartFrom(&a, 200, up, sse)
		StartFrom(&b, 200, up, sse)
		if !maps.EqualFunc(a.h, b.h, slices.Equal) {
			t.Fatalf("sse %v: Start got %v, StartFrom set %v", sse, a.h, b.h)
		}
		if sse && !maps.EqualFunc(a.h, SSEAnswerHeaders(up), slices.Equal) {
			t.Fatalf("sse: %v, SSEAnswerHeaders %v", a.h, SSEAnswerHeaders(up))
		}
	}
}
