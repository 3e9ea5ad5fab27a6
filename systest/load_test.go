package systest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// callResult is what a caller saw of one call.
type callResult struct {
	seq    int
	edge   int
	stream bool
	phase  string
	start  time.Time
	end    time.Time

	status   int
	callID   string // x-weir-call-id; "" when no answer headers came
	member   string // x-weir-member
	attempts int    // x-weir-attempts
	body     []byte
	// complete: the whole HTTP answer arrived (headers and a body that
	// ended cleanly: Content-Length met or the chunked terminator read).
	// A call the caller saw complete is answered; anything else is a
	// transport error (err is set).
	complete bool
	// success: complete, 200, and a whole answer in the format asked for
	// (a chat completion with choices; a stream ending with data: [DONE]
	// and no error event).
	success bool
	err     error
}

// callTimeout bounds one call of the load.
const callTimeout = 20 * time.Second

// streaming counts the streams an edge is answering: those whose headers
// arrived and whose body has not ended.
type streaming struct {
	n    atomic.Int64
	last atomic.Int64 // when the latest stream's headers arrived, Unix ns
}

// chat sends one chat completion with key to the edge at base; mid, when
// not nil, counts it while it is a stream being answered.
func chat(ctx context.Context, c *http.Client, base, key, model string, stream bool, seq int, mid *streaming) (r callResult) {
	r = callResult{stream: stream, seq: seq, start: time.Now()}
	defer func() { r.end = time.Now() }() // r is the named result: the end is what the caller gets
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"system test call %d"}],"max_tokens":16,"stream":%t}`, model, seq, stream)
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		r.err = err
		return r
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		r.err = err
		return r
	}
	defer resp.Body.Close()
	if mid != nil && stream {
		mid.n.Add(1)
		mid.last.Store(time.Now().UnixNano())
		defer mid.n.Add(-1)
	}
	r.status = resp.StatusCode
	r.callID = resp.Header.Get("X-Weir-Call-Id")
	r.member = resp.Header.Get("X-Weir-Member")
	r.attempts, _ = strconv.Atoi(resp.Header.Get("X-Weir-Attempts"))
	r.body, err = io.ReadAll(resp.Body)
	if err != nil {
		r.err = fmt.Errorf("reading the answer: %w", err)
		return r
	}
	r.complete = true
	if r.status != http.StatusOK {
		return r
	}
	if stream {
		r.success = bytes.HasSuffix(bytes.TrimSpace(r.body), []byte("data: [DONE]")) && !bytes.Contains(r.body, []byte(`"error"`))
		return r
	}
	var cc struct {
		Choices []json.RawMessage `json:"choices"`
	}
	r.success = json.Unmarshal(r.body, &cc) == nil && len(cc.Choices) > 0
	return r
}

// collector keeps every call's result across the load's runs.
type collector struct {
	mu      sync.Mutex
	results []callResult
	seq     int
}

func (c *collector) add(r callResult) {
	c.mu.Lock()
	c.results = append(c.results, r)
	c.mu.Unlock()
}

func (c *collector) next() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	return c.seq
}

func (c *collector) all() []callResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]callResult(nil), c.results...)
}

// load is a steady open-loop load: rate calls a second, alternately to the
// two edges, every other pair streaming, whatever the previous calls did.
type load struct {
	s       *system
	col     *collector
	clients [2]*http.Client
	trs     [2]*http.Transport
	mid     [2]streaming

	mu    sync.Mutex
	phase string
	stopc chan struct{}
	done  chan struct{}
	calls sync.WaitGroup
}

func newLoad(s *system, col *collector) *load {
	l := &load{s: s, col: col}
	for i := range l.clients {
		l.trs[i] = &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
		l.clients[i] = &http.Client{Transport: l.trs[i]}
	}
	return l
}

// start begins sending rate calls a second, tagged phase.
func (l *load) start(phase string, rate int) {
	l.mu.Lock()
	l.phase = phase
	l.stopc, l.done = make(chan struct{}), make(chan struct{})
	stopc, done := l.stopc, l.done
	l.mu.Unlock()
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for {
			select {
			case <-stopc:
				return
			case <-tick.C:
			}
			seq := l.col.next()
			edge := seq % 2
			stream := (seq/2)%2 == 1
			l.calls.Go(func() {
				r := chat(context.Background(), l.clients[edge], l.s.edgeU[edge], l.s.key, poolModel, stream, seq, &l.mid[edge])
				r.edge, r.phase = edge, phase
				l.col.add(r)
			})
		}
	}()
}

// stop ends the load and waits for every call in flight to end.
func (l *load) stop() {
	l.mu.Lock()
	stopc, done := l.stopc, l.done
	l.mu.Unlock()
	close(stopc)
	<-done
	l.calls.Wait()
}

// streamStarted reports whether edge i is answering a stream whose headers
// arrived within the last d (so that it has most of its answer to go).
func (l *load) streamStarted(i int, d time.Duration) bool {
	return l.mid[i].n.Load() > 0 && time.Since(time.Unix(0, l.mid[i].last.Load())) < d
}

// dropConns forgets idle connections to edge i (after it was killed).
func (l *load) dropConns(i int) { l.trs[i].CloseIdleConnections() }
