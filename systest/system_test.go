package systest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"weir.dev/db/pgserver"
)

// system is the whole of Weir on loopback, as scripts/run.sh starts it but
// with every part under the test's control: a private PostgreSQL cluster
// (behind a fixed-port proxy), a NATS server in this process, the control
// plane with NATS_URL (not its dev-mode embedded server), two edges and a
// pool of two fake provider deployments, seeded with the weir CLI.
type system struct {
	t   testing.TB
	dir string

	pgOpts pgserver.Options
	proxy  *tcpProxy
	dbDSN  string // database weir, through the proxy

	nats *natsServer

	cp    *proc
	cpURL string

	fakes [2]*proc
	fakeP [2]int
	// spare are loopback addresses, free when the system started, that the
	// control plane opens to tenant records like the fakes' ports
	// (--tenant-loopback-ports, R-SEC-2), for a test's own fake providers.
	spare [2]string
	edges [2]*proc
	edgeU [2]string // http://127.0.0.1:port

	env    []string // the children's environment
	cliDir string
	token  string
	key    string // the tenant's API key
	tenant string
}

// memberNames are the pool's members, in fake provider order.
var memberNames = [2]string{"east", "west"}

const (
	poolName  = "sys-pool"
	poolModel = "gpt-4o-mini"
)

// startSystem starts everything and seeds tenant tenant with a pooled model
// and a key; it stops everything when the test ends. The fake providers
// take tokenDelay per output token (16 tokens an answer), so that a call
// lasts a while when a test wants calls in flight.
func startSystem(t *testing.T, tenant string, tokenDelay time.Duration) *system {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	// As root the cluster runs as user postgres, which must reach its
	// directory: open the test's directories (up to the temporary
	// directory) for search, as db/pgserver's own test does.
	for d := dir; d != filepath.Clean(os.TempDir()) && d != filepath.Dir(d); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatalf("open %s for the postgres user: %v", d, err)
		}
	}
	s := &system{t: t, dir: dir, tenant: tenant, cliDir: filepath.Join(dir, "cli")}
	for _, d := range []string{"logs", "cli", "cp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(s.stopAll)

	// PostgreSQL: a private cluster the test may stop and start.
	s.pgOpts = pgserver.Options{Dir: filepath.Join(dir, "pg"), Private: true, Log: io.Discard}
	proxy, err := newTCPProxy()
	if err != nil {
		t.Fatal(err)
	}
	s.proxy = proxy
	if err := s.startPostgres(ctx); err != nil {
		if errors.Is(err, pgserver.ErrNoBinaries) {
			t.Fatalf("systest needs PostgreSQL server binaries (initdb, pg_ctl), also outside CI: %v", err)
		}
		t.Fatal(err)
	}
	adminDSN := "postgres://postgres@" + proxy.addr() + "/postgres?sslmode=disable&connect_timeout=5"
	if s.dbDSN, err = pgserver.EnsureDatabase(ctx, adminDSN, "weir"); err != nil {
		t.Fatal(err)
	}

	// NATS with JetStream, in this process.
	s.nats = &natsServer{storeDir: filepath.Join(dir, "nats")}
	if err := s.nats.authorize(ctx, filepath.Join(dir, "natsauth"), []string{"edge-1", "edge-2"}); err != nil {
		t.Fatal(err)
	}
	if err := s.nats.start(); err != nil {
		t.Fatal(err)
	}

	_, signingKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s.env = childEnv(map[string]string{
		"DATABASE_URL":    s.dbDSN,
		"NATS_URL":        s.nats.url(),
		"WEIR_MASTER_KEY": randomKey(t),
		"WEIR_EDGE_KEY":   randomKey(t),
		"WEIR_CONFIG_DIR": s.cliDir,
		// The control plane signs snapshots and commands with the seed;
		// the edges verify with its public key.
		"WEIR_CONFIG_SIGNING_KEY": base64.StdEncoding.EncodeToString(signingKey.Seed()),
		"WEIR_CONFIG_PUBLIC_KEY":  base64.StdEncoding.EncodeToString(signingKey.Public().(ed25519.PublicKey)),
		// Authenticated, with the production permissions, but plain text
		// on loopback: said explicitly.
		"NATS_INSECURE": "true",
	})

	// Control plane: migrations, the first admin, then the server.
	if out, err := s.run(ctx, nil, bins.controlplane, "migrate"); err != nil {
		t.Fatalf("controlplane migrate: %v\n%s", err, out)
	}
	out, err := s.run(ctx, nil, bins.controlplane, "bootstrap-admin")
	if err != nil {
		t.Fatalf("controlplane bootstrap-admin: %v\n%s", err, out)
	}
	s.token = strings.TrimSpace(out)
	// The fake providers' ports (and spare ones) are chosen now: the
	// control plane opens them to tenant records (R-SEC-2).
	var fakeAddr [2]string
	var loopbackPorts []string
	for i := range s.fakes {
		fakeAddr[i] = freeAddr(t)
		_, p, _ := net.SplitHostPort(fakeAddr[i])
		s.fakeP[i], _ = strconv.Atoi(p)
		loopbackPorts = append(loopbackPorts, p)
	}
	for i := range s.spare {
		s.spare[i] = freeAddr(t)
		_, p, _ := net.SplitHostPort(s.spare[i])
		loopbackPorts = append(loopbackPorts, p)
	}
	s.cpURL = "http://" + freeAddr(t)
	s.cp = s.newProc("controlplane", bins.controlplane, "serve", "--listen", strings.TrimPrefix(s.cpURL, "http://"),
		"--nats-user", "weir-controlplane", "--nats-password", s.nats.cpPassword,
		"--var-dir", filepath.Join(dir, "cp"), "--tenant-loopback-ports", strings.Join(loopbackPorts, ","))
	s.startCP(ctx)

	// The fake provider pool: generous limits, a little latency.
	for i := range s.fakes {
		addr := fakeAddr[i]
		s.fakes[i] = s.newProc("fake-"+memberNames[i], bins.fakeprovider, "-addr", addr, "-flavor", "openai",
			"-rpm", "100000", "-itpm", "100000000", "-otpm", "100000000", "-latency", "10ms", "-token-delay", tokenDelay.String())
		if err := s.fakes[i].start(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range s.fakes {
		s.waitUp(ctx, s.fakes[i], "fake provider", func() error { return dial(fmt.Sprintf("127.0.0.1:%d", s.fakeP[i])) })
	}

	s.seed(ctx)

	for i := range s.edges {
		addr := freeAddr(t)
		s.edgeU[i] = "http://" + addr
		id := fmt.Sprintf("edge-%d", i+1)
		s.edges[i] = s.newProc(id, bins.edge, "--nats-url", s.nats.url(), "--nats-user", id, "--nats-password", s.nats.edgePasswords[id],
			"--edge-id", fmt.Sprintf("edge-%d", i+1), "--state-dir", filepath.Join(dir, fmt.Sprintf("edge-%d", i+1)),
			"--listen", addr, "--admin-listen", freeAddr(t), "--shutdown-grace", "1s")
		if err := s.edges[i].start(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range s.edges {
		s.waitEdgeServes(ctx, i)
	}
	return s
}

// stopAll kills every child, stops NATS and PostgreSQL, and on failure
// prints the end of every log.
func (s *system) stopAll() {
	for _, p := range append(append([]*proc{s.cp}, s.edges[:]...), s.fakes[:]...) {
		if p != nil {
			p.kill()
		}
	}
	if s.nats != nil {
		s.nats.stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := pgserver.Stop(ctx, s.pgOpts); err != nil {
		s.t.Errorf("stop PostgreSQL: %v", err)
	}
	if s.proxy != nil {
		s.proxy.close()
	}
	if s.t.Failed() {
		s.dumpLogs()
	}
}

// dumpLogs prints the end of every child's log and of PostgreSQL's.
func (s *system) dumpLogs() {
	paths, _ := filepath.Glob(filepath.Join(s.dir, "logs", "*.log"))
	paths = append(paths, filepath.Join(s.dir, "pg", "postgres.log"))
	for _, p := range paths {
		s.t.Logf("---- last lines of %s ----\n%s", p, tail(p, 60))
	}
}

func (s *system) newProc(name, bin string, args ...string) *proc {
	return &proc{name: name, bin: bin, args: args, env: s.env, logPath: filepath.Join(s.dir, "logs", name+".log")}
}

// fatalf fails the test at once; the cleanup then kills every child and
// prints the end of every log.
func (s *system) fatalf(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf(format, args...)
}

// startPostgres starts (or restarts) the private cluster and points the
// proxy at it.
func (s *system) startPostgres(ctx context.Context) error {
	dsn, err := pgserver.Ensure(ctx, s.pgOpts)
	if err != nil {
		return err
	}
	hp, err := hostPort(dsn)
	if err != nil {
		return err
	}
	s.proxy.setBackend(hp)
	return nil
}

// stopPostgres stops the private cluster (pg_ctl stop -m fast).
func (s *system) stopPostgres(ctx context.Context) error {
	s.proxy.setBackend("")
	return pgserver.Stop(ctx, s.pgOpts)
}

// startCP starts the control plane and waits until its health check says
// SERVING (which needs the database) and the CLI can log in.
func (s *system) startCP(ctx context.Context) {
	s.t.Helper()
	if err := s.cp.start(); err != nil {
		s.t.Fatal(err)
	}
	s.waitUp(ctx, s.cp, "control plane", s.cpHealthy)
}

// cpHealthy asks grpc.health.v1 over the Connect protocol (JSON).
func (s *system) cpHealthy() error {
	req, _ := http.NewRequest(http.MethodPost, s.cpURL+"/grpc.health.v1.Health/Check", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte("SERVING")) || bytes.Contains(b, []byte("NOT_SERVING")) {
		return fmt.Errorf("health: %d %s", resp.StatusCode, b)
	}
	return nil
}

// waitUp polls ready until it succeeds, failing at once when p exited.
func (s *system) waitUp(ctx context.Context, p *proc, what string, ready func() error) {
	s.t.Helper()
	err := waitFor(ctx, 90*time.Second, 20*time.Millisecond, func() error {
		if gone, err := p.exited(); gone {
			return fmt.Errorf("%w: %s exited: %v", errExited, p.name, err)
		}
		return ready()
	})
	if err != nil {
		s.fatalf("%s %s is not ready: %v", what, p.name, err)
	}
}

var errExited = errors.New("process exited")

// waitEdgeServes waits until edge i answers /readyz and serves a call with
// the tenant's key (its config came from NATS or its disk cache).
func (s *system) waitEdgeServes(ctx context.Context, i int) {
	s.t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	s.waitUp(ctx, s.edges[i], "edge", func() error {
		resp, err := c.Get(s.edgeU[i] + "/readyz")
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %d", resp.StatusCode)
		}
		return s.modelServed(c, i, poolModel)
	})
}

// modelServed reports whether edge i lists model for the tenant's key in
// GET /v1/models.
func (s *system) modelServed(c *http.Client, i int, model string) error {
	req, _ := http.NewRequest(http.MethodGet, s.edgeU[i]+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+s.key)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/v1/models: %d %s", resp.StatusCode, b)
	}
	if !bytes.Contains(b, []byte(`"id":"`+model+`"`)) {
		return fmt.Errorf("/v1/models does not list %s: %s", model, b)
	}
	return nil
}

// seed creates, through the weir CLI as scripts/run.sh does, the tenant,
// the provider key secret, the pool of two members and an API key.
func (s *system) seed(ctx context.Context) {
	s.t.Helper()
	s.mustWeir(ctx, nil, "login", "--url", s.cpURL, "--token", s.token)
	s.mustWeir(ctx, nil, "tenant", "create", s.tenant)
	s.mustWeir(ctx, nil, "login", "--url", s.cpURL, "--token", s.token, "--tenant", s.tenant)
	s.mustWeir(ctx, strings.NewReader("sk-systest-provider-key"), "secret", "set", "sys-provider-key", "--host", "127.0.0.1")
	limits := []string{"--rpm", "100000", "--input-tpm", "100000000", "--output-tpm", "100000000"}
	s.mustWeir(ctx, nil, append([]string{"provider", "pool", "add", poolName, memberNames[0], "--preset", "openai",
		"--base-url", fmt.Sprintf("http://127.0.0.1:%d/v1", s.fakeP[0]), "--models", poolModel,
		"--key-secret", "sys-provider-key", "--region", "us-east", "--weight", "1", "--account", "east",
		"--price", poolModel + "=0.15,0.6,0.075"}, limits...)...)
	s.mustWeir(ctx, nil, append([]string{"provider", "pool", "add", poolName, memberNames[1],
		"--base-url", fmt.Sprintf("http://127.0.0.1:%d/v1", s.fakeP[1]),
		"--key-secret", "sys-provider-key", "--region", "us-west", "--weight", "1", "--account", "west",
		"--price", poolModel + "=0.15,0.6,0.075"}, limits...)...)
	s.key = strings.TrimSpace(s.mustWeir(ctx, nil, "key", "create", "load"))
	if s.key == "" || strings.ContainsAny(s.key, " \n") {
		s.fatalf("weir key create printed %q, want the key alone", s.key)
	}
}

// weir runs the CLI; the error carries its stderr.
func (s *system) weir(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	return s.run(ctx, stdin, bins.weir, args...)
}

func (s *system) mustWeir(ctx context.Context, stdin io.Reader, args ...string) string {
	s.t.Helper()
	out, err := s.weir(ctx, stdin, args...)
	if err != nil {
		s.fatalf("weir %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// run runs a binary to completion with the children's environment.
func (s *system) run(ctx context.Context, stdin io.Reader, bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = s.env
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%w: %s", err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// query runs fn on a fresh connection to the weir database.
func (s *system) query(ctx context.Context, fn func(*pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.dbDSN)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return fn(conn)
}

// childEnv is this process's environment without what would point a child
// at another system (DATABASE_URL of make test, a NATS_URL, WEIR_*), plus
// set.
func childEnv(set map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "DATABASE_URL" || k == "NATS_URL" || strings.HasPrefix(k, "WEIR_") || strings.HasPrefix(k, "FAKEPROVIDER_") {
			continue
		}
		env = append(env, kv)
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, k+"="+set[k])
	}
	return env
}

// randomKey is 32 random bytes, base64.
func randomKey(t testing.TB) string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b[:])
}

// freeAddr returns a loopback address with a port free at the moment.
func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func dial(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}
