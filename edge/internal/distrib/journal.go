package distrib

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"
)

// journal is the edge's append-only spool of call records: every record is
// written here before it is published, and stays until the stream acked
// it. It is a directory of segment files "seg-<16 hex>.log"; each holds
// frames of [uint32 length][uint32 CRC-32C][payload], big-endian. The last
// segment is the active one; it is sealed (fsync'd, closed) when it reaches
// maxSegment bytes and a new one begins. A segment whose records are all
// acked is deleted. The position up to which records are acked is kept in
// "acked" (write-then-rename), so a restart replays only what may not have
// reached the stream.
//
// A frame is written with one write(2) as the record arrives, so a record
// survives the process being killed; the active segment is fsync'd by sync,
// called in batches, so a record survives the machine failing once synced.
// A torn frame at a segment's end (the machine died mid-write) is cut off on
// open.
type journal struct {
	dir        string
	maxSegment int64

	mu     sync.Mutex
	segs   []*segment // ascending; the last is active
	w      *os.File   // the active segment, append-only
	dirty  bool
	closed bool
	notify chan struct{} // a frame was appended
}

// segment is one file of the journal.
type segment struct {
	seq    uint64
	size   int64 // bytes of whole frames
	sealed bool
	rd     *os.File // opened for reading on demand
}

// pos is a place in the journal: a segment and a byte offset in it.
type pos struct {
	seq uint64
	off int64
}

func (p pos) less(q pos) bool { return p.seq < q.seq || p.seq == q.seq && p.off < q.off }

const (
	frameHeader = 8
	// maxFrame bounds a payload: a larger length read back is corruption.
	maxFrame   = 64 << 20
	ackedFile  = "acked"
	deadFile   = "dead.log"
	segPrefix  = "seg-"
	segSuffix  = ".log"
	defaultSeg = 8 << 20
)

// checksum is CRC-32C; MakeTable returns the package's cached table for
// Castagnoli, so this builds nothing per call.
func checksum(p []byte) uint32 { return crc32.Checksum(p, crc32.MakeTable(crc32.Castagnoli)) }

func segName(seq uint64) string { return fmt.Sprintf("%s%016x%s", segPrefix, seq, segSuffix) }

// startSegment makes seq the active segment. Caller holds mu (or owns j).
func (j *journal) startSegment(seq uint64) error {
	f, err := os.OpenFile(filepath.Join(j.dir, segName(seq)), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("distrib: journal: %w", err)
	}
	if err := syncDir(j.dir); err != nil {
		_ = f.Close()
		return err
	}
	j.w = f
	j.segs = append(j.segs, &segment{seq: seq})
	return nil
}

// segment returns the segment seq, or nil. Caller holds mu (or owns j).
func (j *journal) segment(seq uint64) *segment {
	for _, s := range j.segs {
		if s.seq == seq {
			return s
		}
	}
	return nil
}

// append writes one payload as a frame at the end of the journal.
func (j *journal) append(payload []byte) error {
	frame := makeFrame(payload)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return errors.New("distrib: journal closed")
	}
	act := j.segs[len(j.segs)-1]
	if act.size >= j.maxSegment {
		if err := j.rotate(); err != nil {
			return err
		}
		act = j.segs[len(j.segs)-1]
	}
	n, err := j.w.Write(frame)
	if err != nil {
		if n > 0 {
			_ = j.w.Truncate(act.size) // never leave half a frame before the next
		}
		return fmt.Errorf("distrib: journal: %w", err)
	}
	act.size += int64(n)
	j.dirty = true
	select {
	case j.notify <- struct{}{}:
	default:
	}
	return nil
}

// rotate seals the active segment and starts the next. Caller holds mu.
func (j *journal) rotate() error {
	act := j.segs[len(j.segs)-1]
	if err := j.w.Sync(); err != nil {
		return fmt.Errorf("distrib: journal: %w", err)
	}
	if err := j.w.Close(); err != nil {
		return fmt.Errorf("distrib: journal: %w", err)
	}
	act.sealed = true
	j.dirty = false
	return j.startSegment(act.seq + 1)
}

// sync fsyncs the active segment when anything was appended since the last
// sync. It does not hold the lock while the disk works, so appends go on.
func (j *journal) sync() error {
	j.mu.Lock()
	if j.closed || !j.dirty {
		j.mu.Unlock()
		return nil
	}
	f := j.w
	j.dirty = false
	j.mu.Unlock()
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
		j.mu.Lock()
		j.dirty = true
		j.mu.Unlock()
		return fmt.Errorf("distrib: journal: %w", err)
	}
	return nil
}

// close fsyncs and closes every file. When everything is acked (acked is
// the end), the segments are removed and the journal is left empty.
func (j *journal) close(acked pos) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	var errs []error
	if err := j.w.Sync(); err != nil {
		errs = append(errs, err)
	}
	if err := j.w.Close(); err != nil {
		errs = append(errs, err)
	}
	act := j.segs[len(j.segs)-1]
	act.sealed = true
	_, a := j.normalize(acked)
	empty := !a.less(pos{seq: act.seq, off: act.size}) // acked is at (or past) the end
	for _, s := range j.segs {
		if s.rd != nil {
			_ = s.rd.Close()
		}
		if empty {
			_ = os.Remove(filepath.Join(j.dir, segName(s.seq)))
		}
	}
	if empty {
		_ = os.Remove(filepath.Join(j.dir, ackedFile))
	} else if err := j.saveAcked(acked); err != nil {
		errs = append(errs, err)
	}
	if err := syncDir(j.dir); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("distrib: journal close: %w", errors.Join(errs...))
	}
	return nil
}

// deadLetter appends a payload that can never be published to the
// dead-letter file (same framing as a segment), fsync'd, for an operator.
func (j *journal) deadLetter(payload []byte) error {
	f, err := os.OpenFile(filepath.Join(j.dir, deadFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("distrib: journal: %w", err)
	}
	_, err = f.Write(makeFrame(payload))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("distrib: journal: dead letter: %w", err)
	}
	return nil
}

// makeFrame is a payload with its header.
func makeFrame(payload []byte) []byte {
	frame := make([]byte, frameHeader+len(payload))
	binary.BigEndian.PutUint32(frame[:4], uint32(len(payload)))
	binary.BigEndian.PutUint32(frame[4:8], checksum(payload))
	copy(frame[frameHeader:], payload)
	return frame
}
