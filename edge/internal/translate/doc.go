// Package translate rewrites chat calls between the caller's API format and
// a member's wire format (ROUTING.md §11, R-FMT-2..8). It is pure: no
// network, no clock, standard library and weir.dev/routing only.
//
// Every translation goes through one neutral form, so that each format is
// read once and written once instead of once per pair:
//
//	caller body ──Parse{Chat,Responses,Messages}──▶ *Request ──Render{OpenAI,Anthropic,Gemini}──▶ member body
//	member answer ──Decode{OpenAI,Anthropic,Gemini}Answer──▶ *Answer ──Encode{Chat,Responses,Messages}Answer──▶ caller answer
//	member stream ──Decoder (one event in, Events out)──▶ Event… ──Encoder (one Event in, SSE bytes out)──▶ caller stream
//
// The API, by file:
//   - ir.go: the neutral form (Request, Message, Part, Tool, ToolChoice,
//     Answer, Finish, Event).
//   - parse_*.go: ParseChat, ParseResponses, ParseMessages(body) (*Request,
//     error).
//   - render_*.go: RenderOpenAI(r, model), RenderAnthropic(r, model,
//     defaultMaxOutput), RenderGemini(r) ([]byte, error).
//   - answer_*.go: DecodeAnswer(w routing.WireFormat, body) (*Answer, error)
//     and EncodeAnswer(ep routing.Endpoint, a *Answer, model string)
//     ([]byte, error); ErrorBody (R-FMT-5); the embeddings pair (R-FMT-7).
//   - stream_*.go: NewDecoder(w) Decoder and NewEncoder(ep, model,
//     includeUsage) Encoder.
//
// A body the parser cannot read is a *BadRequest (the gateway answers 400
// invalid_request naming the field); nothing here panics on any input (the
// fuzz tests hold it to that).
package translate
