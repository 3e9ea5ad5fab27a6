package sim

import (
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"weir.dev/routing"
)

// RetryStyle is how a simulated member names the wait in its 429 answers.
type RetryStyle uint8

const (
	// RetrySeconds sends retry-after in whole seconds, rounded up.
	RetrySeconds RetryStyle = iota
	// RetryMillis sends retry-after-ms, and retry-after in whole seconds.
	RetryMillis
	// RetryNone sends no retry-after at all; only the rate-limit headers.
	RetryNone
)

// Provider behaviour.
const (
	// cacheTTL is how long a provider keeps a job's prompt prefix.
	cacheTTL = 5 * time.Minute
	// baseLatency, prefillPerToken and decodePerToken make a served
	// answer's latency roughly proportional to its tokens; cached prompt
	// tokens need no prefill.
	baseLatency     = 250 * time.Millisecond
	prefillPerToken = 100 * time.Microsecond
	decodePerToken  = 15 * time.Millisecond
	// A refusal (429) comes back after 30–120 ms, a server error after
	// 0.1–2 s.
	minRefusal     = 30 * time.Millisecond
	maxRefusal     = 120 * time.Millisecond
	minServerError = 100 * time.Millisecond
	maxServerError = 2 * time.Second
)

// answer is what one attempt got back from a simulated member.
type answer struct {
	member  int
	status  int
	header  http.Header
	body    []byte
	latency time.Duration
	// usage is what the provider reports for a served call.
	usage routing.Usage
	// started is when the attempt went out.
	started time.Time
}

// request is one attempt as a simulated member sees it.
type request struct {
	job    string
	prompt int64
	output int64
}

type cacheEntry struct {
	prefix  int64
	expires time.Time
}

// provider is one simulated deployment: token buckets for requests and
// tokens per minute that refill continuously, a prompt cache per job, an
// error rate, and a time after which its quota is spent.
type provider struct {
	spec  MemberSpec
	wire  routing.WireFormat
	rnd   *rand.Rand
	errs  float64
	start time.Time

	reqLevel, tokLevel float64
	last               time.Time
	cache              map[string]cacheEntry
}

func newProvider(spec MemberSpec, wire routing.WireFormat, errRate float64, seed uint64, index int, start time.Time) *provider {
	return &provider{
		spec: spec, wire: wire, errs: errRate, start: start,
		rnd:      rand.New(rand.NewPCG(seed, 0x70726f76+uint64(index))),
		reqLevel: float64(spec.RPM), tokLevel: float64(spec.TPM), last: start,
		cache: map[string]cacheEntry{},
	}
}

func (p *provider) reqRate() float64 { return float64(p.spec.RPM) / 60 }
func (p *provider) tokRate() float64 { return float64(p.spec.TPM) / 60 }

func (p *provider) refill(now time.Time) {
	dt := now.Sub(p.last).Seconds()
	if dt <= 0 {
		return
	}
	p.last = now
	p.reqLevel = math.Min(float64(p.spec.RPM), p.reqLevel+dt*p.reqRate())
	p.tokLevel = math.Min(float64(p.spec.TPM), p.tokLevel+dt*p.tokRate())
}

func (p *provider) spent(now time.Time) bool {
	return p.spec.SpentAfter > 0 && !now.Before(p.start.Add(p.spec.SpentAfter))
}

func (p *provider) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(p.rnd.Int64N(int64(hi-lo)+1))
}

// handle answers one attempt that reaches the member at now. Its buckets
// are charged at admission (prompt plus output tokens, as providers count
// a request against the minute it was admitted in); every answer carries the
// rate-limit headers of the member's wire format.
func (p *provider) handle(r request, now time.Time) *answer {
	p.refill(now)
	a := &answer{started: now}
	switch {
	case p.spent(now):
		a.status = 429
		a.body = []byte(`{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`)
		a.latency = p.between(minRefusal, maxRefusal)
		a.header = p.headers(now)
		return a
	case p.rnd.Float64() < p.errs:
		a.status, a.body = p.serverError()
		a.latency = p.between(minServerError, maxServerError)
		a.header = p.headers(now)
		return a
	}
	need := float64(r.prompt + r.output)
	if p.reqLevel < 1 || p.tokLevel < need {
		wait := 0.0
		if p.reqLevel < 1 {
			wait = (1 - p.reqLevel) / p.reqRate()
		}
		if p.tokLevel < need {
			wait = math.Max(wait, (need-p.tokLevel)/p.tokRate())
		}
		a.status = 429
		a.body = p.rateLimitBody(p.tokLevel < need)
		a.latency = p.between(minRefusal, maxRefusal)
		a.header = p.headers(now)
		p.retryAfter(a.header, time.Duration(wait*float64(time.Second)))
		return a
	}
	p.reqLevel--
	p.tokLevel -= need
	var cached int64
	if e, ok := p.cache[r.job]; ok && now.Before(e.expires) {
		cached = min(e.prefix, r.prompt)
	}
	fresh := r.prompt - cached
	lat := baseLatency + time.Duration(fresh)*prefillPerToken + time.Duration(r.output)*decodePerToken
	lat = time.Duration(float64(lat) * (0.85 + 0.3*p.rnd.Float64()))
	a.status, a.latency = 200, lat
	a.header = p.headers(now)
	a.usage = routing.Usage{CacheReadTokens: cached, OutputTokens: r.output}
	if p.wire == routing.WireAnthropic {
		// The caller marks the end of its prompt for caching: what is not
		// read from the cache is written to it.
		a.usage.CacheWriteTokens = fresh
	} else {
		a.usage.InputTokens = fresh
	}
	p.cache[r.job] = cacheEntry{prefix: r.prompt + r.output, expires: now.Add(lat + cacheTTL)}
	return a
}

// serverError is one of the 5xx answers a provider gives now and then. 502
// and 504 are left out: they mean the model may have run (R-FAIL-7), which
// no baseline could fail over from either.
func (p *provider) serverError() (int, []byte) {
	if p.wire == routing.WireAnthropic {
		if p.rnd.IntN(2) == 0 {
			return 529, []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		}
		return 500, []byte(`{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`)
	}
	if p.rnd.IntN(2) == 0 {
		return 503, []byte(`{"error":{"message":"The engine is currently overloaded, please try again later.","type":"server_error","param":null,"code":null}}`)
	}
	return 500, []byte(`{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`)
}

func (p *provider) rateLimitBody(tokens bool) []byte {
	if p.wire == routing.WireAnthropic {
		what := "requests"
		if tokens {
			what = "input tokens"
		}
		return []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of ` + what + ` per minute. Please reduce the prompt length or the maximum tokens requested, or try again later."}}`)
	}
	typ, unit := "requests", "requests per min (RPM)"
	if tokens {
		typ, unit = "tokens", "tokens per min (TPM)"
	}
	return []byte(`{"error":{"message":"Rate limit reached for sim-model on ` + unit + `. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"` + typ + `","param":null,"code":"rate_limit_exceeded"}}`)
}

// retryAfter names the wait of a 429 in the member's style.
func (p *provider) retryAfter(h http.Header, wait time.Duration) {
	secs := strconv.FormatInt(int64(math.Ceil(max(wait.Seconds(), 1e-9))), 10)
	switch p.spec.Retry {
	case RetrySeconds:
		h.Set("Retry-After", secs)
	case RetryMillis:
		h.Set("Retry-After-Ms", strconv.FormatInt(int64(math.Ceil(float64(wait)/float64(time.Millisecond))), 10))
		h.Set("Retry-After", secs)
	}
}

// headers are the rate-limit headers of the member's wire format, as of
// now: limit, what remains in each bucket, and when it is full again.
func (p *provider) headers(now time.Time) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	reqRem := int64(math.Max(0, math.Floor(p.reqLevel)))
	tokRem := int64(math.Max(0, math.Floor(p.tokLevel)))
	reqReset := time.Duration((float64(p.spec.RPM) - p.reqLevel) / p.reqRate() * float64(time.Second))
	tokReset := time.Duration((float64(p.spec.TPM) - p.tokLevel) / p.tokRate() * float64(time.Second))
	if p.wire == routing.WireAnthropic {
		stamp := func(d time.Duration) string {
			t := now.Add(d)
			if t.Truncate(time.Second) != t {
				t = t.Truncate(time.Second).Add(time.Second)
			}
			return t.UTC().Format(time.RFC3339)
		}
		h.Set("Anthropic-Ratelimit-Requests-Limit", strconv.FormatInt(p.spec.RPM, 10))
		h.Set("Anthropic-Ratelimit-Requests-Remaining", strconv.FormatInt(reqRem, 10))
		h.Set("Anthropic-Ratelimit-Requests-Reset", stamp(reqReset))
		h.Set("Anthropic-Ratelimit-Tokens-Limit", strconv.FormatInt(p.spec.TPM, 10))
		h.Set("Anthropic-Ratelimit-Tokens-Remaining", strconv.FormatInt(tokRem, 10))
		h.Set("Anthropic-Ratelimit-Tokens-Reset", stamp(tokReset))
		return h
	}
	h.Set("X-Ratelimit-Limit-Requests", strconv.FormatInt(p.spec.RPM, 10))
	h.Set("X-Ratelimit-Remaining-Requests", strconv.FormatInt(reqRem, 10))
	h.Set("X-Ratelimit-Reset-Requests", reqReset.Round(time.Millisecond).String())
	h.Set("X-Ratelimit-Limit-Tokens", strconv.FormatInt(p.spec.TPM, 10))
	h.Set("X-Ratelimit-Remaining-Tokens", strconv.FormatInt(tokRem, 10))
	h.Set("X-Ratelimit-Reset-Tokens", tokReset.Round(time.Millisecond).String())
	return h
}
