package translate

import (
	"io"

	"weir.dev/routing"
)

// TEMPORARY: lead's stubs until the helpers' files land. Delete on merge.

func ParseChat(body []byte) (*Request, error)      { return nil, nil }
func ParseResponses(body []byte) (*Request, error) { return nil, nil }
func ParseMessages(body []byte) (*Request, error)  { return nil, nil }
func Inspect(ep routing.Endpoint, body []byte) routing.Features {
	return 0
}
func RenderOpenAI(r *Request, model string) ([]byte, error) { return nil, nil }
func RenderAnthropic(r *Request, model string, d int64) ([]byte, error) {
	return nil, nil
}
func RenderGemini(r *Request) ([]byte, error)                          { return nil, nil }

type Decoder interface {
	Decode(name string, data []byte, emit func(Event) error) error
}
type Encoder interface {
	Encode(ev Event, w io.Writer) error
	Usage() routing.Usage
}

func NewDecoder(w routing.WireFormat) Decoder                        { return nil }
func NewEncoder(ep routing.Endpoint, model string, iu bool) Encoder { return nil }
