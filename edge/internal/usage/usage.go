// Package usage carries the edge's call records (R-SEE-2) to where they are
// counted: a Sink takes each record once. The NATS sink lives with
// distribution; here are an in-memory sink for tests and a JSON-lines sink
// for standalone runs.
package usage

import (
	"context"
	"io"
	"sync"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

// Sink takes one record per call. Record must not block the caller for long
// and must not keep rec after returning unless it copies it; it reports an
// error only when the record is lost.
type Sink interface {
	Record(ctx context.Context, rec *telemetryv1.CallRecord) error
}

// Memory keeps every record in memory, in order; for tests.
type Memory struct {
	mu   sync.Mutex
	recs []*telemetryv1.CallRecord
	ch   chan struct{}
}

// NewMemory returns an empty memory sink.
func NewMemory() *Memory { return &Memory{ch: make(chan struct{}, 1)} }

// Record implements Sink.
func (m *Memory) Record(_ context.Context, rec *telemetryv1.CallRecord) error {
	m.mu.Lock()
	m.recs = append(m.recs, proto.Clone(rec).(*telemetryv1.CallRecord))
	m.mu.Unlock()
	select {
	case m.ch <- struct{}{}:
	default:
	}
	return nil
}

// Records returns a copy of the records so far.
func (m *Memory) Records() []*telemetryv1.CallRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*telemetryv1.CallRecord(nil), m.recs...)
}

// Wait blocks until at least n records arrived or ctx ends.
func (m *Memory) Wait(ctx context.Context, n int) []*telemetryv1.CallRecord {
	for {
		if r := m.Records(); len(r) >= n {
			return r
		}
		select {
		case <-ctx.Done():
			return m.Records()
		case <-m.ch:
		}
	}
}

// JSONLines writes each record as one protojson line to w.
type JSONLines struct {
	mu sync.Mutex
	w  io.Writer
}

// NewJSONLines writes to w (e.g. a log file or os.Stdout).
func NewJSONLines(w io.Writer) *JSONLines { return &JSONLines{w: w} }

// Record implements Sink.
func (j *JSONLines) Record(_ context.Context, rec *telemetryv1.CallRecord) error {
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(rec)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	_, err = j.w.Write(append(b, '\n'))
	return err
}

// Discard drops every record; for an edge whose records are not wanted.
type Discard struct{}

// Record implements Sink.
func (Discard) Record(context.Context, *telemetryv1.CallRecord) error { return nil }
