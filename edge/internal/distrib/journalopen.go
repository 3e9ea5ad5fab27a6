package distrib

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// openJournal opens (or creates) the journal in dir: it validates every
// segment, cuts torn tails, and starts a fresh active segment. It returns
// the position to replay from: the saved acked position when it names a
// segment that still exists, else the start of the oldest segment.
func openJournal(dir string, maxSegment int64) (*journal, pos, error) {
	if maxSegment <= 0 {
		maxSegment = defaultSeg
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, pos{}, fmt.Errorf("distrib: journal: %w", err)
	}
	j := &journal{dir: dir, maxSegment: maxSegment, notify: make(chan struct{}, 1)}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, pos{}, fmt.Errorf("distrib: journal: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		hexSeq, ok := strings.CutPrefix(name, segPrefix)
		if !ok || !strings.HasSuffix(hexSeq, segSuffix) {
			continue
		}
		seq, err := strconv.ParseUint(strings.TrimSuffix(hexSeq, segSuffix), 16, 64)
		if err != nil {
			continue
		}
		size, err := validSize(filepath.Join(dir, name))
		if err != nil {
			return nil, pos{}, err
		}
		j.segs = append(j.segs, &segment{seq: seq, size: size, sealed: true})
	}
	slices.SortFunc(j.segs, func(a, b *segment) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	next := uint64(1)
	if n := len(j.segs); n > 0 {
		next = j.segs[n-1].seq + 1
	}
	if err := j.startSegment(next); err != nil {
		return nil, pos{}, err
	}
	start := pos{seq: j.segs[0].seq}
	if p, err := readAcked(dir); err == nil && j.segment(p.seq) != nil && p.off <= j.segment(p.seq).size {
		start = p
	}
	return j, start, nil
}

// validSize scans a segment and returns the size of its whole, valid
// frames, truncating the file there when something follows them.
func validSize(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, fmt.Errorf("distrib: journal: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("distrib: journal: %w", err)
	}
	var off int64
	for {
		_, n, err := readFrame(f, off)
		if err != nil {
			break
		}
		off += n
	}
	if off < st.Size() {
		if err := f.Truncate(off); err != nil {
			return 0, fmt.Errorf("distrib: journal: cutting a torn tail: %w", err)
		}
		if err := f.Sync(); err != nil {
			return 0, fmt.Errorf("distrib: journal: %w", err)
		}
	}
	return off, nil
}

// readFrame reads the frame at off; n is its length with the header.
func readFrame(r io.ReaderAt, off int64) (payload []byte, n int64, err error) {
	var h [frameHeader]byte
	if _, err := r.ReadAt(h[:], off); err != nil {
		return nil, 0, err
	}
	size := binary.BigEndian.Uint32(h[:4])
	if size > maxFrame {
		return nil, 0, errors.New("distrib: journal: frame too large")
	}
	payload = make([]byte, size)
	if _, err := r.ReadAt(payload, off+frameHeader); err != nil {
		return nil, 0, err
	}
	if checksum(payload) != binary.BigEndian.Uint32(h[4:]) {
		return nil, 0, errors.New("distrib: journal: checksum mismatch")
	}
	return payload, frameHeader + int64(size), nil
}
