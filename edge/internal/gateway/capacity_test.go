package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"weir.dev/edge/internal/fakeprovider"
	"weir.dev/edge/internal/gateway"
	"weir.dev/edge/internal/wire"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing"
)

// capped sets the first record's first member's max_in_flight and the
// record's max_wait (0: the default wait).
func capped(maxInFlight int64, maxWait time.Duration) func(*configv1.TenantSnapshot) {
	return func(s *configv1.TenantSnapshot) {
		r := s.Records[0]
		r.Members[0].Limits = &configv1.Limits{MaxInFlight: maxInFlight}
		if maxWait > 0 {
			r.Recovery.MaxWait = durationpb.New(maxWait)
		}
	}
}

// memberInFlight is what the member's view shows in flight on this edge
// (the calls holding its slots, R-CAP-1).
func memberInFlight(h *harness, record string) int {
	m := h.table.Record(record).Members[0]
	return h.states.View(m, time.Now()).InFlight
}

func waitMemberInFlight(t *testing.T, h *harness, record string, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for memberInFlight(h, record) != want {
		if time.Now().After(deadline) {
			t.Fatalf("member in flight %d, want %d", memberInFlight(h, record), want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// R-CAP-1: with max_in_flight 1 a second call waits while the first one's
// stream is open, and is answered once that stream has ended.
func TestMemberConcurrencyWaitsForSlot_RCAP1(t *testing.T) {
	t.Parallel()
	h, up := heldHarness(t, harnessOpts{tenant: capped(1, 0)})
	first, res := openStream(t, h, callerKey)
	if res != nil {
		t.Fatalf("first call: %d %s", res.status, res.body)
	}
	if n := memberInFlight(h, "pool"); n != 1 {
		t.Fatalf("in flight %d while the first stream is open", n)
	}
	type opened struct {
		call *heldCall
		res  *result
	}
	second := make(chan opened, 1)
	go func() {
		c, r := openStream(t, h, callerKey)
		second <- opened{c, r}
	}()
	select {
	case o := <-second:
		t.Fatalf("second call did not wait for the slot: %+v", o.res)
	case <-time.After(300 * time.Millisecond):
	}
	// The first stream ends: its slot goes to the waiting call.
	up.release(first)
	if _, err := io.ReadAll(first.resp.Body); err != nil {
		t.Fatal(err)
	}
	var o opened
	select {
	case o = <-second:
	case <-time.After(5 * time.Second):
		t.Fatal("second call still waiting after the first ended")
	}
	if o.res != nil {
		t.Fatalf("second call: %d %s", o.res.status, o.res.body)
	}
	if n := memberInFlight(h, "pool"); n != 1 {
		t.Fatalf("in flight %d with the second stream open", n)
	}
	up.release(o.call)
	_, _ = io.ReadAll(o.call.resp.Body)
	waitMemberInFlight(t, h, "pool", 0)
	if rec := h.record(2); rec.GetStatus() != 200 || len(rec.GetAttempts()) != 1 {
		t.Fatalf("second record: %v", rec)
	}
}

// R-END-7: every member full and none freed a slot within max_wait: 503
// weir_pool_busy with Retry-After and x-should-retry: true, no attempt, in
// the caller's format.
func TestPoolBusy_REND7(t *testing.T) {
	t.Parallel()
	t.Run("OpenAI format", func(t *testing.T) {
		t.Parallel()
		h, up := heldHarness(t, harnessOpts{tenant: capped(1, 300*time.Millisecond)})
		first, res := openStream(t, h, callerKey)
		if res != nil {
			t.Fatalf("first call: %d", res.status)
		}
		start := time.Now()
		res2 := h.post("/v1/chat/completions", chatBody)
		waited := time.Since(start)
		if res2.status != 503 || res2.header.Get("X-Weir-Error") != routing.CodePoolBusy || res2.header.Get("Retry-After") != "1" ||
			res2.header.Get("X-Should-Retry") != "true" || res2.header.Get("X-Weir-Attempts") != "0" {
			t.Fatalf("%d %v %s", res2.status, res2.header, res2.body)
		}
		if waited < 250*time.Millisecond || waited > 3*time.Second {
			t.Fatalf("answered after %v, want after max_wait 300ms", waited)
		}
		e := decodeErr(t, res2.body)
		if e.Error.Type != routing.CodePoolBusy || e.Error.Code != routing.CodePoolBusy || e.Weir.Provider != "" {
			t.Fatalf("body %s", res2.body)
		}
		up.release(first)
		_, _ = io.ReadAll(first.resp.Body)
		waitMemberInFlight(t, h, "pool", 0)
	})
	t.Run("Anthropic format", func(t *testing.T) {
		t.Parallel()
		fake := newFake(t, fakeprovider.Options{})
		sp := recordSpec{name: "claude", wire: configv1.WireFormat_WIRE_FORMAT_ANTHROPIC, models: []*configv1.Model{chatModel("claude-x")},
			members: []fakeMember{{name: "a", fake: fake}}}
		h := newHarnessOpts(t, harnessOpts{tenant: capped(1, 300*time.Millisecond)}, sp)
		fake.Enqueue(fakeprovider.SlowHeaders(time.Second))
		const body = `{"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
		firstDone := make(chan int, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, h.url+"/v1/messages", strings.NewReader(body))
			req.Header.Set("X-Api-Key", callerKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				firstDone <- 0
				return
			}
			_, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			firstDone <- resp.StatusCode
		}()
		waitMemberInFlight(t, h, "claude", 1)
		res := h.post("/v1/messages", body, "Authorization", "", "X-Api-Key", callerKey)
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(res.body, &e); err != nil || res.status != 503 || e.Type != "error" || e.Error.Type != "overloaded_error" ||
			!strings.HasPrefix(e.Error.Message, routing.CodePoolBusy+": ") || res.header.Get("X-Weir-Error") != routing.CodePoolBusy ||
			res.header.Get("Retry-After") != "1" || res.header.Get("X-Should-Retry") != "true" {
			t.Fatalf("%d %v %s", res.status, res.header, res.body)
		}
		if st := <-firstDone; st != 200 {
			t.Fatalf("first call %d", st)
		}
		if fake.Total() != 1 {
			t.Fatalf("the member got %d requests, want 1", fake.Total())
		}
		waitMemberInFlight(t, h, "claude", 0)
	})
}

// R-CAP-1: a call gives its slot back when its stream is cut (R-FAIL-11)
// and when its caller goes away; the next call then gets the slot at once
// (with max_wait 300 ms a lost slot would answer weir_pool_busy).
func TestSlotReleased_RCAP1(t *testing.T) {
	t.Parallel()
	t.Run("cut stream", func(t *testing.T) {
		t.Parallel()
		sp := pool(t, "a")
		h := newHarnessOpts(t, harnessOpts{tenant: capped(1, 300*time.Millisecond)}, sp)
		h.fakes["a"].Enqueue(fakeprovider.CutAfter(1))
		res := h.post("/v1/chat/completions", `{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		if res.status != 200 || !strings.Contains(string(res.body), `"error"`) {
			t.Fatalf("cut stream: %d %s", res.status, res.body)
		}
		waitMemberInFlight(t, h, "pool", 0)
		if res := h.post("/v1/chat/completions", chatBody); res.status != 200 {
			t.Fatalf("call after the cut stream: %d %s", res.status, res.body)
		}
	})
	t.Run("client gone", func(t *testing.T) {
		t.Parallel()
		h, up := heldHarness(t, harnessOpts{tenant: capped(1, 300*time.Millisecond)})
		first, res := openStream(t, h, callerKey)
		if res != nil {
			t.Fatalf("first call: %d", res.status)
		}
		first.cancel()
		waitMemberInFlight(t, h, "pool", 0)
		second, res := openStream(t, h, callerKey)
		if res != nil {
			t.Fatalf("call after the client left: %d %s", res.status, res.body)
		}
		up.release(second)
		_, _ = io.ReadAll(second.resp.Body)
		waitMemberInFlight(t, h, "pool", 0)
	})
	t.Run("client gone while waiting", func(t *testing.T) {
		t.Parallel()
		h, up := heldHarness(t, harnessOpts{tenant: capped(1, 5*time.Second)})
		first, res := openStream(t, h, callerKey)
		if res != nil {
			t.Fatalf("first call: %d", res.status)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.url+"/v1/chat/completions", strings.NewReader(chatBody))
		req.Header.Set("Authorization", "Bearer "+callerKey)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("waiting call answered %d before its client left", resp.StatusCode)
		}
		// The call that left is recorded cancelled and holds nothing: the
		// first stream's end frees the slot for nobody, and a new call gets
		// it at once.
		if rec := h.record(1); rec.GetStatus() != 499 {
			t.Fatalf("record of the call that left: %v", rec)
		}
		up.release(first)
		_, _ = io.ReadAll(first.resp.Body)
		waitMemberInFlight(t, h, "pool", 0)
		next, res := openStream(t, h, callerKey)
		if res != nil {
			t.Fatalf("next call %d %s", res.status, res.body)
		}
		up.release(next)
		_, _ = io.ReadAll(next.resp.Body)
		waitMemberInFlight(t, h, "pool", 0)
	})
}

// R-HEAD-6: a member that used its rpd today is passed over for the next
// member until midnight; the view counts today's requests.
func TestRequestsPerDayMovesOn_RHEAD6(t *testing.T) {
	t.Parallel()
	h := newHarnessOpts(t, harnessOpts{tenant: func(s *configv1.TenantSnapshot) {
		s.Records[0].Members[0].Limits = &configv1.Limits{Rpd: 2}
		s.Records[0].DayZone = "America/Los_Angeles"
	}}, pool(t, "a", "b"))
	var served []string
	for range 4 {
		res := h.post("/v1/chat/completions", chatBody)
		if res.status != 200 {
			t.Fatalf("%d %s", res.status, res.body)
		}
		served = append(served, res.header.Get("X-Weir-Member"))
	}
	if strings.Join(served, ",") != "a,a,b,b" {
		t.Fatalf("members served %v, want a twice then b", served)
	}
	v := h.states.View(h.table.Record("pool").Members[0], time.Now())
	if v.RequestsToday != 2 || v.RPDShare != 2 || !v.DayEnds.After(time.Now()) || v.DayEnds.After(time.Now().Add(25*time.Hour)) {
		t.Fatalf("view today %d/%d, day ends %v", v.RequestsToday, v.RPDShare, v.DayEnds)
	}
	if h.fakes["a"].Total() != 2 {
		t.Fatalf("a got %d requests", h.fakes["a"].Total())
	}
}

// R-HEAD-7: a member's declared rpm counts against this edge's share: with
// 2 live edges the member takes half its rpm from this edge.
func TestSharedRPM_RHEAD7(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		edges int
		want  int
	}{{1, 4}, {2, 2}} {
		h := newHarnessOpts(t, harnessOpts{
			tenant: func(s *configv1.TenantSnapshot) {
				ms := s.Records[0].Members
				ms[0].Limits = &configv1.Limits{Rpm: 4}
				ms[0].Weight = 10_000 // a is chosen while it has room
				ms[1].Order = 1       // same tier as a
			},
			cfg: func(c *gateway.Config) { n := tc.edges; c.LiveEdges = func() int { return n } },
		}, pool(t, "a", "b"))
		for range 8 {
			if res := h.post("/v1/chat/completions", chatBody); res.status != 200 {
				t.Fatalf("%d %s", res.status, res.body)
			}
		}
		if got := h.fakes["a"].Total(); got != tc.want {
			t.Errorf("%d live edges: a served %d calls of 8, want %d (its share of rpm 4)", tc.edges, got, tc.want)
		}
		if h.states.LiveEdges() != tc.edges {
			t.Errorf("states share among %d edges, want %d", h.states.LiveEdges(), tc.edges)
		}
	}
}

// R-CAP-1: many concurrent calls through a member with max_in_flight 2:
// the provider never holds more than 2 at once, and every call is answered.
func TestConcurrencyCapHolds_RCAP1(t *testing.T) {
	t.Parallel()
	sp := pool(t, "a")
	h := newHarnessOpts(t, harnessOpts{tenant: capped(2, 0)}, sp)
	h.fakes["a"].SetLatency(20*time.Millisecond, 0)
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n := int64(h.fakes["a"].InFlight()); n > peak.Load() {
				peak.Store(n)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	const calls = 12
	codes := make(chan int, calls)
	for range calls {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, h.url+"/v1/chat/completions", strings.NewReader(chatBody))
			req.Header.Set("Authorization", "Bearer "+callerKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				codes <- 0
				return
			}
			_, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	for range calls {
		if c := <-codes; c != 200 {
			t.Errorf("a call got %d", c)
		}
	}
	close(stop)
	<-sampled
	if p := peak.Load(); p > 2 || p < 1 {
		t.Fatalf("the provider held %d calls at once, cap 2", p)
	}
	waitMemberInFlight(t, h, "pool", 0)
}

// R-CAP-1: a call that panics (a bug) gives its member's slot back too.
func TestSlotReleasedOnPanic_RCAP1(t *testing.T) {
	t.Parallel()
	at := &atomic.Int32{}
	h := newHarnessOpts(t, harnessOpts{
		tenant: capped(1, 300*time.Millisecond),
		adapters: func(m map[routing.WireFormat]wire.Adapter) {
			for w, a := range m {
				m[w] = panicAdapter{Adapter: a, at: at}
			}
		},
	}, pool(t, "a"))
	for _, where := range []int32{panicInRelay, panicAfterEvent} {
		at.Store(where)
		body := chatBody
		if where == panicAfterEvent {
			body = `{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`
		}
		res := h.post("/v1/chat/completions", body)
		if res.header.Get("X-Weir-Error") != "weir_internal" && !strings.Contains(string(res.body), "weir_internal") {
			t.Fatalf("panic at %d: %d %s", where, res.status, res.body)
		}
		waitMemberInFlight(t, h, "pool", 0)
	}
	at.Store(panicNone)
	if res := h.post("/v1/chat/completions", chatBody); res.status != 200 {
		t.Fatalf("call after the panics: %d %s", res.status, res.body)
	}
}
