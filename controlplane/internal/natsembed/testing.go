package natsembed

import "testing"

// NewTest starts a server on a random loopback port with its store in a
// fresh temporary directory, and closes it when the test ends. It fails the
// test when the server cannot start.
func NewTest(t testing.TB) *Server {
	t.Helper()
	s, err := Start(Options{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatalf("natsembed: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}
