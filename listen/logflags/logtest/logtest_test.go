package logtest

import (
	"strings"
	"sync"
	"testing"
)

func TestBufferConcurrent(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("ab"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("ab", 400) {
		t.Fatalf("%d bytes", len(got))
	}
	c := b.Bytes()
	c[0] = 'x'
	if b.String()[0] != 'a' {
		t.Error("Bytes is not a copy")
	}
}
