package translate

import (
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
