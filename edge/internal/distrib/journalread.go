package distrib

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// read returns the payload of the frame at p and the position after it;
// ok is false when p is the end of the journal. A position at the end of a
// sealed segment moves on to the next one.
func (j *journal) read(p pos) (payload []byte, next pos, ok bool, err error) {
	j.mu.Lock()
	seg, p := j.normalize(p)
	if seg == nil || p.off >= seg.size {
		j.mu.Unlock()
		return nil, p, false, nil
	}
	if seg.rd == nil {
		f, err := os.Open(filepath.Join(j.dir, segName(seg.seq)))
		if err != nil {
			j.mu.Unlock()
			return nil, p, false, fmt.Errorf("distrib: journal: %w", err)
		}
		seg.rd = f
	}
	rd := seg.rd
	j.mu.Unlock()
	payload, n, err := readFrame(rd, p.off)
	if err != nil {
		return nil, p, false, fmt.Errorf("distrib: journal: reading %s at %d: %w", segName(p.seq), p.off, err)
	}
	return payload, pos{seq: p.seq, off: p.off + n}, true, nil
}

// normalize moves p past the ends of sealed segments and past segments that
// are gone. Caller holds mu.
func (j *journal) normalize(p pos) (*segment, pos) {
	for _, s := range j.segs {
		if s.seq < p.seq {
			continue
		}
		if s.seq > p.seq {
			p = pos{seq: s.seq}
		}
		if s.sealed && p.off >= s.size {
			continue
		}
		return s, p
	}
	return nil, p
}

// normalizeLocked is normalize for callers outside the lock.
func (j *journal) normalizeLocked(p pos) (*segment, pos) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.normalize(p)
}

// end is the position after the last frame.
func (j *journal) end() pos {
	j.mu.Lock()
	defer j.mu.Unlock()
	act := j.segs[len(j.segs)-1]
	return pos{seq: act.seq, off: act.size}
}

// ackTo records that every frame before p is acked: the sealed segments
// wholly before it are deleted. The position is saved by saveAcked.
func (j *journal) ackTo(p pos) {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, p = j.normalize(p)
	keep := j.segs[:0]
	for _, s := range j.segs {
		if s.sealed && s.seq < p.seq {
			if s.rd != nil {
				_ = s.rd.Close()
			}
			_ = os.Remove(filepath.Join(j.dir, segName(s.seq)))
			continue
		}
		keep = append(keep, s)
	}
	j.segs = keep
}

// saveAcked stores the acked position durably.
func (j *journal) saveAcked(p pos) error {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], p.seq)
	binary.BigEndian.PutUint64(b[8:], uint64(p.off))
	return writeFileSync(filepath.Join(j.dir, ackedFile), b[:])
}

func readAcked(dir string) (pos, error) {
	b, err := os.ReadFile(filepath.Join(dir, ackedFile))
	if err != nil {
		return pos{}, err
	}
	if len(b) != 16 {
		return pos{}, errors.New("distrib: journal: bad acked file")
	}
	return pos{seq: binary.BigEndian.Uint64(b[:8]), off: int64(binary.BigEndian.Uint64(b[8:]))}, nil
}
