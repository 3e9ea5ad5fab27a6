package translate

import (
	"io"

	"weir.dev/routing"
)

// TEMPORARY: lead's stubs until the helpers' files land. Delete on merge.

func DecodeAnswer(w routing.WireFormat, body []byte) (*Answer, error) { return nil, nil }
func EncodeAnswer(ep routing.Endpoint, a *Answer, model string) ([]byte, error) {
	return nil, nil
}
func ErrorBody(from routing.WireFormat, to routing.Endpoint, status int, body []byte) []byte {
	return nil
}
func RenderGeminiEmbed(body []byte, model string) ([]byte, error) { return nil, nil }
func EncodeGeminiEmbed(a []byte, model string, b64 bool, n int) ([]byte, routing.Usage, error) {
	return nil, routing.Usage{}, nil
}
func EmbedBase64(body []byte) bool { return false }

type Decoder interface {
	Decode(name string, data []byte, emit func(Event) error) error
}
type Encoder interface {
	Encode(ev Event, w io.Writer) error
	Usage() routing.Usage
}

func NewDecoder(w routing.WireFormat) Decoder                        { return nil }
func NewEncoder(ep routing.Endpoint, model string, iu bool) Encoder { return nil }
