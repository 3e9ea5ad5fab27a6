package server

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"testing"
)

// TestBoundedGzipStopsInflating: past max+1 bytes the reader fails instead
// of inflating the rest (what Connect would otherwise drain to report the
// size).
func TestBoundedGzipStopsInflating(t *testing.T) {
	t.Parallel()
	var member bytes.Buffer
	zw := gzip.NewWriter(&member)
	_, _ = zw.Write(make([]byte, 1<<20))
	_ = zw.Close()
	bomb := bytes.Repeat(member.Bytes(), 64) // 64 MiB of zeros
	d := &boundedGzip{max: 1000}
	for range 2 { // pooled decompressors are Reset and reused
		if err := d.Reset(bytes.NewReader(bomb)); err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, d)
		if n != 1001 || !errors.Is(err, errInflatedTooLarge) {
			t.Errorf("inflated %d bytes, err %v; want 1001 and errInflatedTooLarge", n, err)
		}
	}
	small := bytes.NewReader(member.Bytes())
	d = &boundedGzip{max: 1 << 20}
	if err := d.Reset(small); err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, d); n != 1<<20 || err != nil {
		t.Errorf("a message at the limit: %d bytes, %v", n, err)
	}
}
