package upstream

import (
	"bytes"
	"encoding/json"
	"strings"
)

// ErrorBody is what an upstream error body says, as far as the classifier
// reads it: the values of the keys every provider's error envelope uses,
// wherever they sit in the JSON. It holds text read from the answer; its
// methods (Spent, Reason, RetryDelay, AWSBilling, and AWSErrorType) say what
// that text means, and only values that are plain tokens (IsToken) or fixed
// names ever leave it.
type ErrorBody struct {
	codes    []string // "code", "error_code", "errorCode": OpenAI, Azure, Google (a number), AWS
	types    []string // "type", except Anthropic's envelope "type":"error"
	statuses []string // "status": Google's RESOURCE_EXHAUSTED, …
	reasons  []string // "reason": Google's ErrorInfo
	messages []string // "message", "error_message", "errorMessage", a string "error", or the whole body when not JSON
	windows  []string // "quotaId", "quotaMetric", "quota_limit", …: Google's QuotaFailure
	awsTypes []string // "__type": AWS

	retryDelay string // "retryDelay": Google's RetryInfo
}

func (b *ErrorBody) empty() bool {
	return len(b.codes)+len(b.types)+len(b.statuses)+len(b.reasons)+len(b.messages)+len(b.windows)+len(b.awsTypes) == 0 && b.retryDelay == ""
}

// anyMessage reports whether a message contains one of words (lower case),
// ignoring case.
func (b *ErrorBody) anyMessage(words []string) bool {
	for _, m := range b.messages {
		if containsAny(strings.ToLower(m), words) {
			return true
		}
	}
	return false
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// Bounds of body reading.
const (
	maxTokens   = 4096
	maxDepth    = 64
	maxPerField = 16
	maxString   = 1024
)

func appendBounded(list []string, s string) []string {
	if len(list) >= maxPerField {
		return list
	}
	if len(s) > maxString {
		s = s[:maxString]
	}
	return append(list, s)
}

func (b *ErrorBody) add(key, val string) {
	switch strings.ToLower(key) {
	case "code", "error_code", "errorcode":
		b.codes = appendBounded(b.codes, val)
	case "type":
		if val != "error" { // Anthropic's envelope: {"type":"error","error":{…}}
			b.types = appendBounded(b.types, val)
		}
	case "__type":
		b.awsTypes = appendBounded(b.awsTypes, val)
	case "status":
		b.statuses = appendBounded(b.statuses, val)
	case "reason":
		b.reasons = appendBounded(b.reasons, val)
	case "message", "error_message", "errormessage", "error":
		b.messages = appendBounded(b.messages, val)
	case "quotaid", "quota_id", "quotametric", "quota_metric", "quota_limit", "quotalimit":
		b.windows = appendBounded(b.windows, val)
	case "retrydelay", "retry_delay":
		if b.retryDelay == "" && len(val) <= 64 {
			b.retryDelay = val
		}
	}
}

// ParseErrorBody reads the fields the classifier needs from an error body.
// The caller bounds the body (routing reads at most MaxErrorPeek bytes).
// It walks JSON tokens, so a body truncated by the peek still yields every
// field before the cut; an array body (Gemini's OpenAI-compatible endpoint
// wraps its error in a list) and a short text prefix before the first '{'
// ("data: {…}") are read too. A body with no JSON field at all is taken, up
// to 1024 bytes, as one message. At most 4096 tokens are read, 64 levels
// deep, and 16 values of each kind.
func ParseErrorBody(body []byte) ErrorBody {
	var b ErrorBody
	data := bytes.TrimSpace(body)
	if len(data) == 0 {
		return b
	}
	if data[0] != '{' && data[0] != '[' {
		head := data
		if len(head) > 256 {
			head = head[:256]
		}
		if i := bytes.IndexByte(head, '{'); i >= 0 {
			walkJSON(data[i:], &b)
		}
	} else {
		walkJSON(data, &b)
	}
	if b.empty() {
		b.messages = appendBounded(nil, string(data))
	}
	return b
}

// walkJSON reads the string values (and numeric codes) of data into b, by
// the key of the object that holds them, until the JSON ends or breaks.
func walkJSON(data []byte, b *ErrorBody) {
	type frame struct {
		obj     bool
		wantKey bool
		key     string
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []frame
	for n := 0; n < maxTokens; n++ {
		tok, err := dec.Token()
		if err != nil {
			return
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if len(stack) >= maxDepth {
					return
				}
				stack = append(stack, frame{obj: t == '{', wantKey: t == '{'})
			case '}', ']':
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
				if len(stack) > 0 && stack[len(stack)-1].obj {
					stack[len(stack)-1].wantKey = true
				}
			}
		case string:
			if top != nil && top.obj && top.wantKey {
				top.key, top.wantKey = t, false
				continue
			}
			if top != nil && top.obj {
				b.add(top.key, t)
				top.wantKey = true
			}
		case json.Number:
			if top != nil && top.obj && !top.wantKey {
				if strings.EqualFold(top.key, "code") {
					b.codes = appendBounded(b.codes, t.String())
				}
				top.wantKey = true
			}
		default: // bool, nil
			if top != nil && top.obj && !top.wantKey {
				top.wantKey = true
			}
		}
	}
}
