package server_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/secretbox"
	"weir.dev/controlplane/internal/server"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/pgtest"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/proto/gen/weir/admin/v1/adminv1connect"
)

// limitsEnv is a control plane served by Serve on a loopback port.
type limitsEnv struct {
	addr  string
	token string
}

func newLimitsEnv(t *testing.T, limits server.Limits) *limitsEnv {
	t.Helper()
	st := store.New(pgtest.New(t))
	box, err := secretbox.NewBox(bytes.Repeat([]byte{1}, 32), nil)
	if err != nil {
		t.Fatal(err)
	}
	token, err := auth.Bootstrap(context.Background(), st, "root", false, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- server.Serve(ctx, ln, server.Handler(server.Deps{Store: st, Box: box, Limits: limits}), slog.New(slog.DiscardHandler), time.Second)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return &limitsEnv{addr: ln.Addr().String(), token: token}
}

// exchange is one raw HTTP/1.1 request: its head is written at once, then
// body (written by its own goroutine, which stops at the first write
// error). It returns the response (nil when the connection ended without
// one), how many body bytes the server took before it answered or cut the
// connection, and the time to the answer. It may run on goroutines of its
// own: it reports failures with t.Errorf.
func (e *limitsEnv) exchange(t *testing.T, head string, body func(w io.Writer) error) (*http.Response, int64, time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Errorf("dial: %v", err)
		return nil, 0, 0
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, head); err != nil {
		t.Errorf("write the head: %v", err)
		return nil, 0, 0
	}
	cw := &countWriter{w: conn}
	wrote := make(chan struct{})
	go func() { defer close(wrote); _ = body(cw) }()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	took := time.Since(start)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("no answer and no end of the connection within 20s (sent %d body bytes)", cw.n.Load())
		}
		resp = nil
	} else {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body = io.NopCloser(bytes.NewReader(b))
	}
	n := cw.n.Load()
	_ = conn.Close()
	<-wrote
	return resp, n, took
}

type countWriter struct {
	w io.Writer
	n atomic.Int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// zeros writes n zero bytes in 64 KiB writes.
func zeros(n int64) func(io.Writer) error {
	return func(w io.Writer) error {
		buf := make([]byte, 64<<10)
		for n > 0 {
			k := min(n, int64(len(buf)))
			if _, err := w.Write(buf[:k]); err != nil {
				return err
			}
			n -= k
		}
		return nil
	}
}

// connectHead is the head of a Connect unary call of CreateTenant.
func connectHead(addr, token string, length int64, extra string) string {
	h := fmt.Sprintf("POST /weir.admin.v1.TenantService/CreateTenant HTTP/1.1\r\nHost: %s\r\nContent-Type: application/proto\r\nConnect-Protocol-Version: 1\r\nContent-Length: %d\r\n", addr, length)
	if token != "" {
		h += "Authorization: Bearer " + token + "\r\n"
	}
	return h + extra + "\r\n"
}

// allocated runs f and returns the bytes the process allocated meanwhile
// (runtime.MemStats.TotalAlloc: every allocation, freed or not, so an upper
// bound of the heap growth f caused).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHugeBodiesAreNotRead sends four 200 MB bodies at once, without a
// token and then with one: the first are refused from their headers, the
// others at the size limit, and neither kind is read (let alone held in
// memory) past a few megabytes. Not parallel: it measures the process's
// allocations.
func TestHugeBodiesAreNotRead(t *testing.T) {
	e := newLimitsEnv(t, server.Limits{})
	const size, clients = 200 << 20, 4
	for _, tc := range []struct {
		name     string
		token    string
		status   int
		wantCode string
		maxAlloc uint64
	}{
		// Refused from the headers: next to nothing.
		{"unauthenticated", "", http.StatusUnauthorized, `"code":"unauthenticated"`, 16 << 20},
		// Read up to the 4 MiB limit into a growing buffer: under 8 times
		// the limit each.
		{"authenticated", e.token, http.StatusTooManyRequests, `"code":"resource_exhausted"`, clients * 8 * server.DefaultMaxBodyBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sent atomic.Int64
			alloc := allocated(func() {
				var wg sync.WaitGroup
				for range clients {
					wg.Go(func() {
						resp, n, _ := e.exchange(t, connectHead(e.addr, tc.token, size, ""), zeros(size))
						sent.Add(n)
						if resp == nil {
							t.Errorf("connection ended without an answer after %d bytes", n)
							return
						}
						body, _ := io.ReadAll(resp.Body)
						if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.wantCode) {
							t.Errorf("answer %d %s, want %d with %s", resp.StatusCode, body, tc.status, tc.wantCode)
						}
					})
				}
				wg.Wait()
			})
			t.Logf("%d × %d MB bodies: %d MB sent in all, %d MB allocated", clients, size>>20, sent.Load()>>20, alloc>>20)
			if s := sent.Load(); s > clients*(24<<20) {
				t.Errorf("the server took %d MB of the bodies", s>>20)
			}
			if alloc > tc.maxAlloc {
				t.Errorf("%d MB allocated while serving, want at most %d", alloc>>20, tc.maxAlloc>>20)
			}
		})
	}
}

// gzipBomb returns a gzip body of n MiB of zeros (a gzip member per MiB:
// quick to make, about 1 KiB each).
func gzipBomb(t *testing.T, mib int) []byte {
	t.Helper()
	var member bytes.Buffer
	zw := gzip.NewWriter(&member)
	if _, err := zw.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return bytes.Repeat(member.Bytes(), mib)
}

// TestGzipBomb sends a small gzip body that inflates to 256 MiB: without a
// token it is refused before it is inflated (401, not a decoding error);
// with one, inflation stops at the size limit (ResourceExhausted).
func TestGzipBomb(t *testing.T) {
	e := newLimitsEnv(t, server.Limits{})
	bomb := gzipBomb(t, 256)
	for _, tc := range []struct {
		name     string
		token    string
		status   int
		wantCode string
	}{
		{"unauthenticated", "", http.StatusUnauthorized, `"code":"unauthenticated"`},
		{"authenticated", e.token, http.StatusTooManyRequests, `"code":"resource_exhausted"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var resp *http.Response
			alloc := allocated(func() {
				resp, _, _ = e.exchange(t, connectHead(e.addr, tc.token, int64(len(bomb)), "Content-Encoding: gzip\r\n"),
					func(w io.Writer) error { _, err := w.Write(bomb); return err })
			})
			t.Logf("%d KiB gzip of 256 MiB: %d MB allocated", len(bomb)>>10, alloc>>20)
			if resp == nil {
				t.Fatal("connection ended without an answer")
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.wantCode) {
				t.Errorf("answer %d %s, want %d with %s", resp.StatusCode, body, tc.status, tc.wantCode)
			}
			if alloc > 48<<20 {
				t.Errorf("%d MB allocated while serving", alloc>>20)
			}
		})
	}
}

// TestTrickledBodyIsCut sends an authenticated body a byte at a time: the
// body-read deadline ends the request long before the body would end.
func TestTrickledBodyIsCut(t *testing.T) {
	t.Parallel()
	e := newLimitsEnv(t, server.Limits{BodyReadTimeout: 500 * time.Millisecond})
	const size = 100 // 10 s at a byte per 100 ms
	_, n, took := e.exchange(t, connectHead(e.addr, e.token, size, ""), func(w io.Writer) error {
		for range size {
			if _, err := w.Write([]byte{0}); err != nil {
				return err
			}
			time.Sleep(100 * time.Millisecond)
		}
		return nil
	})
	if n >= size || took > 5*time.Second {
		t.Errorf("the server held a trickled body for %v (%d of %d bytes sent)", took, n, size)
	}
}

// TestHeaderLimit refuses headers past 64 KiB.
func TestHeaderLimit(t *testing.T) {
	t.Parallel()
	e := newLimitsEnv(t, server.Limits{})
	head := connectHead(e.addr, e.token, 0, "X-Pad: "+strings.Repeat("a", 100<<10)+"\r\n")
	resp, _, _ := e.exchange(t, head, func(io.Writer) error { return nil })
	if resp == nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("answer %v, want 431", resp)
	}
}

// TestConsoleFormLimit refuses a sign-in form past the console's limit
// with 413.
func TestConsoleFormLimit(t *testing.T) {
	t.Parallel()
	e := newLimitsEnv(t, server.Limits{})
	resp, err := http.Get("http://" + e.addr + "/console/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookies []string
	for _, c := range resp.Cookies() {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	form := "token=" + url.QueryEscape(strings.Repeat("a", 1<<20))
	head := fmt.Sprintf("POST /console/login HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nCookie: %s\r\nContent-Length: %d\r\n\r\n",
		e.addr, strings.Join(cookies, "; "), len(form))
	got, _, _ := e.exchange(t, head, func(w io.Writer) error { _, err := io.WriteString(w, form); return err })
	if got == nil || got.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("answer %v, want 413", got)
	}
}

// TestLimitsOverGRPC: over gRPC (HTTP/2), a large message without a token
// is refused as Unauthenticated, and with one as ResourceExhausted.
func TestLimitsOverGRPC(t *testing.T) {
	t.Parallel()
	e := newLimitsEnv(t, server.Limits{})
	var h2c http.Protocols
	h2c.SetUnencryptedHTTP2(true)
	big := &adminv1.CreateTenantRequest{Name: strings.Repeat("a", 2*server.DefaultMaxBodyBytes)}
	for _, tc := range []struct {
		name  string
		token string
		want  connect.Code
	}{
		{"unauthenticated", "", connect.CodeUnauthenticated},
		{"authenticated", e.token, connect.CodeResourceExhausted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := &http.Client{Transport: bearer{tc.token, &http.Transport{Protocols: &h2c}}}
			tenants := adminv1connect.NewTenantServiceClient(cl, "http://"+e.addr, connect.WithGRPC(), connect.WithSendGzip())
			_, err := tenants.CreateTenant(context.Background(), connect.NewRequest(big))
			if connect.CodeOf(err) != tc.want {
				t.Errorf("CreateTenant = %v, want %v", err, tc.want)
			}
		})
	}
}
