package sim

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"
)

// Workload shape. A job is an agent run or a chat: a system prompt, then
// turns that each add the caller's new message and, once answered, the
// model's output to the prompt of the next turn, so every turn's prompt
// starts with the whole previous turn (the prefix a provider can cache).
const (
	minTurns       = 3
	maxTurns       = 10
	minSystem      = 1500
	maxSystem      = 3000
	minUserTokens  = 200
	maxUserTokens  = 1500
	minOutput      = 100
	maxOutput      = 700
	minThink       = 1 * time.Second
	maxThink       = 8 * time.Second
	requestMaxOut  = 1024       // the max_tokens every call sends
	workloadStream = 0x776f726b // "work": the PCG stream of the workload
)

// Turn is one call of a job.
type Turn struct {
	// Prompt is the turn's input tokens: the system prompt, every earlier
	// turn's message and output, and this turn's new message.
	Prompt int64
	// Output is the tokens the model answers with.
	Output int64
	// Think is how long the caller waits after this turn's answer (or
	// error) before it sends the next turn.
	Think time.Duration
}

// Job is one caller's run of several turns, sent one after the other.
type Job struct {
	ID    string
	Start time.Duration // offset from the start of the run
	Turns []Turn
}

// Tokens is the job's offered load: every turn's prompt plus output.
func (j *Job) Tokens() int64 {
	var n int64
	for _, t := range j.Turns {
		n += t.Prompt + t.Output
	}
	return n
}

// NewWorkload draws the jobs of one run: jobs are drawn until their
// tokens reach tokensPerMinute over the run's duration, and their starts
// are spread uniformly over the duration. The same seed gives the same jobs,
// so every policy of a scenario sees the same arrival sequence.
func NewWorkload(seed uint64, tokensPerMinute float64, d time.Duration) []*Job {
	rnd := rand.New(rand.NewPCG(seed, workloadStream))
	target := int64(tokensPerMinute * d.Minutes())
	var jobs []*Job
	var total int64
	for total < target {
		j := &Job{ID: fmt.Sprintf("job-%05d", len(jobs)+1)}
		n := minTurns + rnd.IntN(maxTurns-minTurns+1)
		prompt := int64(minSystem + rnd.IntN(maxSystem-minSystem+1))
		for range n {
			prompt += int64(minUserTokens + rnd.IntN(maxUserTokens-minUserTokens+1))
			out := int64(minOutput + rnd.IntN(maxOutput-minOutput+1))
			think := minThink + time.Duration(rnd.Int64N(int64(maxThink-minThink)+1))
			j.Turns = append(j.Turns, Turn{Prompt: prompt, Output: out, Think: think})
			prompt += out
		}
		total += j.Tokens()
		jobs = append(jobs, j)
	}
	starts := make([]time.Duration, len(jobs))
	for i := range starts {
		starts[i] = time.Duration(rnd.Int64N(int64(d)))
	}
	sort.Slice(starts, func(a, b int) bool { return starts[a] < starts[b] })
	for i, j := range jobs {
		j.Start = starts[i]
	}
	return jobs
}
