package fakeprovider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// answerText is the text answers are made of, one word (with its leading
// space) per output token, repeated as needed.
const answerText = "Hello from the Weir fake provider. This answer is generated one token at a time so that streaming, usage and rate limits can be tested without a real model behind the gateway."

// tokenText returns output token i.
func tokenText(words []string, i int) string {
	return words[i%len(words)]
}

// splitWords cuts text into tokens that keep their leading space.
func splitWords(text string) []string {
	f := strings.Fields(text)
	for i := 1; i < len(f); i++ {
		f[i] = " " + f[i]
	}
	return f
}

// usage is what an answer reports spending. prompt counts every input token,
// cached and cacheCreated included.
type usage struct {
	prompt, cached, cacheCreated, output int
}

// estimateInput guesses the prompt's tokens from the request body, about
// four bytes a token, as a gateway's own estimate does.
func estimateInput(body []byte) int {
	return max(1, (len(body)+3)/4)
}

// plan returns the answer's usage and whether max tokens cut it short.
func (c *call) plan(maxTokens *int) (u usage, truncated bool) {
	u.prompt = estimateInput(c.body)
	u.cached = min(max(c.set.cachedTokens, 0), u.prompt)
	u.cacheCreated = min(max(c.set.cacheCreated, 0), u.prompt-u.cached)
	u.output = c.set.tokens
	if u.output <= 0 {
		u.output = DefaultTokens
	}
	if maxTokens != nil && *maxTokens >= 0 && *maxTokens < u.output {
		u.output, truncated = *maxTokens, true
	}
	return u, truncated
}

// text returns the first n output tokens joined.
func (c *call) text(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(c.word(i))
	}
	return b.String()
}

// waitWhole waits as long as a whole non-streaming answer takes: the time to
// first byte plus every token. It reports false when the client left.
func (c *call) waitWhole(tokens int) bool {
	return c.sleep(c.set.latency + time.Duration(tokens)*c.set.tokenDelay)
}

// decodeBody unmarshals the request body into v, answering 400 in the
// call's flavor when it is not JSON or a field has the wrong type.
func (c *call) decodeBody(v any) bool {
	body := bytes.TrimSpace(c.body)
	if len(body) == 0 {
		c.badRequest("", "request body is empty")
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			c.badRequest(typeErr.Field, fmt.Sprintf("expected %s, but got %s instead", typeErr.Type, typeErr.Value))
			return false
		}
		c.badRequest("", "body is not valid JSON: "+err.Error())
		return false
	}
	return true
}

// badRequest answers 400 about field (or the whole body when field is "")
// in the flavor's words.
func (c *call) badRequest(field, problem string) {
	var msg string
	switch c.route.flavor {
	case FlavorAnthropic:
		if field == "" {
			msg = problem
		} else {
			msg = field + ": " + problem
		}
	case FlavorGemini, FlavorVertex:
		if field == "" {
			msg = "Invalid JSON payload received. " + problem
		} else {
			msg = "Invalid value at '" + field + "': " + problem
		}
	case FlavorBedrock:
		if field == "" {
			msg = "Malformed input request: " + problem + ", please reformat your input and try again."
		} else {
			msg = "Malformed input request: #/" + field + ": " + problem + ", please reformat your input and try again."
		}
	default:
		if field == "" {
			msg = "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON: " + problem + ".)"
		} else {
			msg = "Invalid value for '" + field + "': " + problem + "."
		}
	}
	c.fail(apiErr{kind: eBadRequest, msg: msg})
}

// unixNow returns the server clock in Unix seconds.
func (c *call) unixNow() int64 { return c.s.now().Unix() }

// timeDur converts a count for multiplying a duration.
func timeDur(n int) time.Duration { return time.Duration(n) }

// itoa is strconv.Itoa, short for headers.
func itoa(n int) string { return strconv.Itoa(n) }
