package gateway

import (
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
)

// countingReader notes whether a read asked for bytes past limit+1 in all.
type countingReader struct {
	r         io.Reader
	limit     int64
	gotten    int64
	askedPast bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.gotten+int64(len(p)) > c.limit+1 && c.limit < math.MaxInt64 {
		c.askedPast = true
	}
	n, err := c.r.Read(p)
	c.gotten += int64(n)
	return n, err
}

// TestReadAllLimit: readAll takes a body as http.MaxBytesReader would let
// it through: whole up to its limit, refused past it, and never reading
// more than limit+1 bytes of it.
func TestReadAllLimit(t *testing.T) {
	for _, limit := range []int64{-1, 0, 1, 10, 511, 512, 513, 2000, math.MaxInt64} {
		for _, size := range []int{0, 1, 9, 10, 11, 511, 512, 513, 514, 1999, 2000, 2001, 5000} {
			for _, oneByte := range []bool{false, true} {
				body := strings.Repeat("x", size)
				var src io.Reader = strings.NewReader(body)
				if oneByte {
					src = iotest.OneByteReader(src)
				}
				cr := &countingReader{r: src, limit: max(limit, 0)}
				got, err := readAll(cr, []byte("keep"), limit)
				_, wantErr := io.ReadAll(http.MaxBytesReader(nil, io.NopCloser(strings.NewReader(body)), limit))
				if (err != nil) != (wantErr != nil) || err != nil && !errors.Is(err, errBodyTooLarge) {
					t.Fatalf("limit %d size %d: error %v, MaxBytesReader's %v", limit, size, err, wantErr)
				}
				if err == nil && string(got) != "keep"+body {
					t.Fatalf("limit %d size %d: read %d bytes", limit, size, len(got))
				}
				if cr.askedPast {
					t.Fatalf("limit %d size %d: a read asked for more than limit+1 bytes in all", limit, size)
				}
			}
		}
	}
}
