package routing

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// t0 is the virtual "now" of every test.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newRand(seed uint64) Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

type mopt func(*Member)

func weight(w uint32) mopt  { return func(m *Member) { m.Weight = w } }
func order(o uint32) mopt   { return func(m *Member) { m.Order = o } }
func region(r string) mopt  { return func(m *Member) { m.Region = r } }
func account(a string) mopt { return func(m *Member) { m.Account = a } }
func retains() mopt         { return func(m *Member) { m.RetainsData = true } }
func off() mopt             { return func(m *Member) { m.Off = true } }
func tag(k, v string) mopt  { return func(m *Member) { m.Tags[k] = v } }
func limits(l Limits) mopt  { return func(m *Member) { m.Limits = l } }
func serves(models ...string) mopt {
	return func(m *Member) {
		m.Models = map[string]bool{}
		for _, x := range models {
			m.Models[x] = true
		}
	}
}

// price sets a whole price (input, output, cache read, cache write) in
// dollars-per-million micro-units for every model given.
func price(in, out, cr, cw Micros, models ...string) mopt {
	return func(m *Member) {
		for _, x := range models {
			m.Prices[x] = Price{Input: in, Output: out, CacheRead: cr, CacheWrite: cw, HasInput: true, HasOutput: true, HasCacheRead: true, HasCacheWrite: true}
		}
	}
}

func mem(name string, opts ...mopt) *Member {
	m := &Member{Name: name, Weight: 1, Order: 1, Tags: map[string]string{}, Prices: map[string]Price{}}
	for _, o := range opts {
		o(m)
	}
	return m
}

type ropt func(*Record)

func managed() ropt                   { return func(r *Record) { r.Managed = true; r.TenantID = "" } }
func priority(p int32) ropt           { return func(r *Record) { r.Priority = p } }
func created(d time.Duration) ropt    { return func(r *Record) { r.CreatedAt = t0.Add(d) } }
func recovery(f func(*Recovery)) ropt { return func(r *Record) { f(&r.Recovery) } }
func allowRegions(rs ...string) ropt  { return func(r *Record) { r.AllowedRegions = rs } }
func embeddings(models ...string) ropt {
	return func(r *Record) {
		for _, x := range models {
			r.Models[x] = KindEmbeddings
		}
	}
}

var recSeq int

// rec builds a record serving models (chat) over members, wiring IDs,
// back-pointers and accounts as the compile package does.
func rec(name string, wire WireFormat, models []string, members []*Member, opts ...ropt) *Record {
	recSeq++
	r := &Record{ID: "r" + strconv.Itoa(recSeq) + "-" + name, Name: name, TenantID: "t1", Wire: wire,
		Models: map[string]ModelKind{}, Pool: len(members) > 1, Members: members,
		Recovery: DefaultRecovery(), CreatedAt: t0}
	for _, x := range models {
		r.Models[x] = KindChat
	}
	for _, o := range opts {
		o(r)
	}
	for i, m := range members {
		m.Record, m.Index, m.ID = r, i, r.ID+"/"+m.Name
		if m.Account == "" {
			m.Account = m.ID
		}
	}
	return r
}

func table(rules DataRules, recs ...*Record) *Table {
	return NewTable("t1", "acme", rules, recs, nil)
}

func chat(model string) Request {
	return Request{Endpoint: EndpointChatCompletions, Model: model, InputTokens: 1000}
}

// begin starts a call or fails the test.
func begin(t *testing.T, tb *Table, st *States, req Request, seed uint64) *Call {
	t.Helper()
	c, err := tb.Begin(req, st, newRand(seed), t0)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	return c
}

// answer is a scripted upstream answer for drive.
type answer struct {
	v  Verdict
	rl *RateLimits
}

func ok200() answer { return answer{v: Verdict{Kind: KindAnswered, Status: 200}} }
func rate429() answer {
	return answer{v: Verdict{Kind: KindRateLimited, Status: 429, Reason: "http_429"}}
}
func rate429Until(u time.Time) answer {
	return answer{v: Verdict{Kind: KindRateLimited, Status: 429, Until: u}}
}
func v(kind FailureKind, status int) answer { return answer{v: Verdict{Kind: kind, Status: status}} }

// drive runs a call to its end: script gives each member's answer by name
// (members not in script answer 200). It returns the members tried in
// order, the final action and the call.
func drive(t *testing.T, c *Call, now time.Time, script map[string]answer) (tried []string, act Action) {
	t.Helper()
	for {
		s, ok := c.Next(now)
		if !ok {
			return tried, 0
		}
		now = now.Add(s.Wait)
		c.Dispatch(now)
		tried = append(tried, s.Member.Name)
		a, found := script[s.Member.Name]
		if !found {
			a = ok200()
		}
		act = c.Report(a.v, a.rl, now)
		if act != ActNext {
			return tried, act
		}
	}
}
