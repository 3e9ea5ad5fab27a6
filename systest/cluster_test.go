package systest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"weir.dev/db/pgserver"
	"weir.dev/listen/listentest"
)

// The cluster: three NATS nodes (JetStream R3), two control planes behind
// a load balancer, three edges, two fake provider deployments.
const (
	clusterNATS   = 3
	clusterCPs    = 2
	clusterEdges  = 3
	clusterRate   = 24 // calls a second over all edges
	clusterBudget = "100"
	// singletonMsg is what a control plane logs when it starts the jobs
	// only one replica runs (package singleton).
	singletonMsg = "singleton jobs started on this replica"
)

// clusterSys is Weir as an operator runs it on several machines, on
// loopback: every part a process started from deploy/'s files.
type clusterSys struct {
	*system // Postgres, the CLI, the tenant; its cp and edges are unused

	ca       *listentest.CA
	client   *http.Client // trusts ca
	nats     [clusterNATS]*proc
	natsMon  [clusterNATS]string // monitoring address
	natsURLs string
	cps      [clusterCPs]*proc
	cpAddr   [clusterCPs]string
	lb       *balancer
	js       jetstream.JetStream // the test's own view of NATS, as the control plane's user
	edges    [clusterEdges]*proc
	edgeURL  [clusterEdges]string
	edgeLive [clusterEdges]atomic.Bool
}

// TestClusterUnderFaults is issue 15's cluster test: steady load over all
// edges while, one after another, the NATS node the edges use is killed,
// the control plane holding the singleton lock is SIGKILLed, a second NATS
// node is killed briefly (JetStream loses its quorum, then has it again)
// and an edge is SIGKILLed. After each: every call a caller saw answered
// is recorded exactly once, leases never promised more than a budget held,
// a CLI change reaches every live edge; and the singleton jobs' handover
// is timed.
func TestClusterUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("the cluster test takes minutes; skipped with -short")
	}
	c := startCluster(t)
	ctx := context.Background()

	col := &collector{}
	var phase atomic.Value
	phase.Store("steady")
	stop := c.startLoad(col, &phase)
	defer stop()
	time.Sleep(3 * time.Second)
	c.checkpoint(ctx, t, col, "steady", nil)

	var report []string
	note := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		report = append(report, line)
		t.Log(line)
	}

	// Each phase: the fault at from; CLI changes during it (each timed
	// until every live edge serves it); recovered once the system works as
	// before; then a few seconds of load and CLI changes after it.

	// 1. The NATS node most edges are connected to dies (and stays down
	// until the end).
	first := c.busiestNATS(t)
	phase.Store("nats-kill")
	from := time.Now()
	c.nats[first].kill()
	took := c.propagate(ctx, t, "nats-kill", 1) // the first change served: recovered
	recovered := time.Now()
	took = append(took, c.propagate(ctx, t, "nats-kill-more", changesPerWindow-1)...)
	c.reportPhase(note, col, "nats-kill", from, recovered, took, c.afterFault(ctx, t, "nats-kill"))
	c.checkpoint(ctx, t, col, "nats-kill", nil)

	// 2. The control plane running the singleton jobs is SIGKILLed; the
	// other takes them over, and the killed one comes back as a standby.
	holder := c.singletonHolder(t)
	other := 1 - holder
	phase.Store("cp-kill")
	from = time.Now()
	c.cps[holder].kill()
	lock := c.waitSingleton(t, other, from)
	views := c.waitViewsMirrored(ctx, t, from)
	took = c.propagate(ctx, t, "cp-kill", changesPerWindow)
	recovered = time.Now()
	note("cp-kill: %s took the singleton lock %s after the SIGKILL of %s; views were mirrored again %s after it; the outbox published a CLI change %s after it",
		c.cps[other].name, lock.Round(time.Millisecond), c.cps[holder].name, views.Round(time.Millisecond), recovered.Sub(from).Round(time.Millisecond))
	if err := c.cps[holder].start(); err != nil {
		t.Fatal(err)
	}
	c.waitCP(ctx, t, holder)
	after := c.afterFault(ctx, t, "cp-kill")
	if h := c.singletonHolder(t); h != other {
		t.Errorf("%s took the singleton jobs back on its restart; %s holds them", c.cps[h].name, c.cps[other].name)
	}
	c.reportPhase(note, col, "cp-kill", from, recovered, took, after)
	c.checkpoint(ctx, t, col, "cp-kill", nil)

	// 3. A second NATS node dies for a while: one of three is left, and
	// JetStream has no quorum until the second is back. A CLI change made
	// meanwhile waits in the outbox.
	second := (first + 1) % clusterNATS
	phase.Store("quorum-loss")
	from = time.Now()
	c.nats[second].kill()
	time.Sleep(2 * time.Second)
	model := "cluster-quorum-loss"
	if out, err := c.weir(ctx, nil, "provider", "set", poolName, "--models", poolModel+","+model); err != nil {
		t.Fatalf("weir provider set without a JetStream quorum: %v\n%s", err, out)
	}
	changed := time.Now()
	time.Sleep(6 * time.Second)
	if err := c.nats[second].start(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	c.waitServed(ctx, t, model, 60*time.Second)
	recovered = time.Now()
	note("quorum-loss: a CLI change made without a quorum reached every edge %s after it was made, %s after the node came back",
		recovered.Sub(changed).Round(time.Millisecond), recovered.Sub(back).Round(time.Millisecond))
	c.reportPhase(note, col, "quorum-loss", from, recovered, []time.Duration{recovered.Sub(changed)}, c.afterFault(ctx, t, "quorum-loss"))
	c.checkpoint(ctx, t, col, "quorum-loss", nil)

	// 4. An edge is SIGKILLed and started again with its state.
	victim := clusterEdges - 1
	phase.Store("edge-kill")
	from = time.Now()
	c.edgeLive[victim].Store(false)
	c.edges[victim].kill()
	took = c.propagate(ctx, t, "edge-kill", changesPerWindow)
	if err := c.edges[victim].start(); err != nil {
		t.Fatal(err)
	}
	c.waitEdge(ctx, t, victim)
	recovered = time.Now()
	note("edge-kill: %s served again %s after its SIGKILL", c.edges[victim].name, recovered.Sub(from).Round(time.Millisecond))
	c.reportPhase(note, col, "edge-kill", from, recovered, took, c.afterFault(ctx, t, "edge-kill"))
	killAt := from
	c.checkpoint(ctx, t, col, "edge-kill", &edgeKill{edge: victim, at: killAt})

	// The first NATS node comes back; everything is as it was.
	if err := c.nats[first].start(); err != nil {
		t.Fatal(err)
	}
	phase.Store("after")
	time.Sleep(3 * time.Second)
	stop()
	c.checkpoint(ctx, t, col, "after", &edgeKill{edge: victim, at: killAt})
	c.checkBudget(ctx, t)
	c.checkLeases(ctx, t)
	t.Logf("cluster test report:\n  %s", strings.Join(report, "\n  "))
}

// startCluster starts everything from deploy/'s files and seeds the
// tenant with the usual pool, a budget and a key.
func startCluster(t *testing.T) *clusterSys {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	for d := dir; d != filepath.Clean(os.TempDir()) && d != filepath.Dir(d); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := &system{t: t, dir: dir, tenant: "cluster", cliDir: filepath.Join(dir, "cli")}
	c := &clusterSys{system: s, ca: listentest.NewCA(t)}
	c.client = c.ca.Client()
	c.client.Timeout = callTimeout
	for _, d := range []string{"logs", "cli", "tls"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(c.stopAll)

	// One certificate for every server on 127.0.0.1, signed by the CA.
	certPEM, keyPEM := c.ca.Leaf(t, 2)
	caFile, certFile, keyFile := filepath.Join(dir, "tls", "ca.pem"), filepath.Join(dir, "tls", "cert.pem"), filepath.Join(dir, "tls", "key.pem")
	listentest.WriteFile(t, caFile, c.ca.PEM())
	listentest.WriteFile(t, certFile, certPEM)
	listentest.WriteFile(t, keyFile, keyPEM)

	// PostgreSQL, one for the cluster (its own availability is its
	// operator's: replication is outside Weir).
	s.pgOpts = pgserver.Options{Dir: filepath.Join(dir, "pg"), Private: true, Log: io.Discard}
	proxy, err := newTCPProxy()
	if err != nil {
		t.Fatal(err)
	}
	s.proxy = proxy
	if err := s.startPostgres(ctx); err != nil {
		t.Fatal(err)
	}
	if s.dbDSN, err = pgserver.EnsureDatabase(ctx, "postgres://postgres@"+proxy.addr()+"/postgres?sslmode=disable&connect_timeout=5", "weir"); err != nil {
		t.Fatal(err)
	}

	// NATS: the users of `controlplane nats-config`, the configuration of
	// deploy/nats, the variables of deploy/env/nats.env, the command of
	// deploy/systemd/nats-server.service.
	var edgeIDs []string
	for i := range clusterEdges {
		edgeIDs = append(edgeIDs, fmt.Sprintf("edge-%d", i+1))
	}
	authDir := filepath.Join(dir, "natsauth")
	s.env = childEnv(nil)
	auth, err := s.run(ctx, nil, bins.controlplane, "nats-config", "--var-dir", authDir, "--nats-edges", strings.Join(edgeIDs, ","))
	if err != nil {
		t.Fatalf("controlplane nats-config: %v", err)
	}
	password := func(name string) string {
		b, err := os.ReadFile(filepath.Join(authDir, "nats-auth", name+".password"))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	natsUnit := readUnit(t, "nats-server.service")
	var clientAddr, routeAddr [clusterNATS]string
	var routes, urls []string
	for i := range clusterNATS {
		clientAddr[i], routeAddr[i], c.natsMon[i] = freeAddr(t), freeAddr(t), freeAddr(t)
		routes = append(routes, "nats-route://"+routeAddr[i])
		urls = append(urls, "tls://"+clientAddr[i])
	}
	c.natsURLs = strings.Join(urls, ",")
	for i := range clusterNATS {
		name := fmt.Sprintf("nats-%d", i+1)
		etc := filepath.Join(dir, name, "etc")
		copyFile(t, "nats/nats.conf", filepath.Join(etc, "nats", "nats.conf"))
		if err := os.WriteFile(filepath.Join(etc, "nats", "weir-auth.conf"), []byte(auth), 0o600); err != nil {
			t.Fatal(err)
		}
		env := envFor(t, "nats.env", map[string]string{
			"NATS_SERVER_NAME": name, "NATS_LISTEN": clientAddr[i], "NATS_MONITOR_LISTEN": c.natsMon[i],
			"NATS_CLUSTER_LISTEN": routeAddr[i], "NATS_ROUTES": "[" + strings.Join(routes, ", ") + "]",
			"NATS_STORE_DIR": filepath.Join(dir, name, "store"), "NATS_MAX_FILE_STORE": "1GB",
			"NATS_TLS_CERT": certFile, "NATS_TLS_KEY": keyFile, "NATS_TLS_CA": caFile,
		}, nil)
		bin, args := command(t, natsUnit.start, etc)
		c.nats[i] = &proc{name: name, bin: bin, args: args, env: env, logPath: filepath.Join(dir, "logs", name+".log")}
		if err := c.nats[i].start(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range clusterNATS {
		s.waitUp(ctx, c.nats[i], "NATS", func() error { return c.natsHealthy(i) })
	}
	nc, err := nats.Connect(c.natsURLs, nats.UserInfo("weir-controlplane", password("controlplane")), nats.RootCAs(caFile),
		nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if c.js, err = jetstream.New(nc, jetstream.WithDefaultTimeout(time.Second)); err != nil {
		t.Fatal(err)
	}

	// The control planes: deploy/env/controlplane.env's variables and the
	// unit's commands (migrate before serve, on both at once).
	_, signingKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	publicKey := base64.StdEncoding.EncodeToString(signingKey.Public().(ed25519.PublicKey))
	masterKey, edgeKey := randomKey(t), randomKey(t)
	fakeAddr := [2]string{freeAddr(t), freeAddr(t)}
	var loopback []string
	for i, a := range fakeAddr {
		_, p, _ := net.SplitHostPort(a)
		s.fakeP[i], _ = strconv.Atoi(p)
		loopback = append(loopback, p)
	}
	cpUnit := readUnit(t, "weir-controlplane.service")
	for i := range clusterCPs {
		name := fmt.Sprintf("controlplane-%d", i+1)
		c.cpAddr[i] = freeAddr(t)
		env := envFor(t, "controlplane.env", map[string]string{
			"DATABASE_URL": s.dbDSN, "WEIR_CP_LISTEN": c.cpAddr[i], "WEIR_CP_TLS_CERT": certFile, "WEIR_CP_TLS_KEY": keyFile,
			"WEIR_MASTER_KEY": masterKey, "WEIR_EDGE_KEY": edgeKey, "WEIR_CONFIG_SIGNING_KEY": base64.StdEncoding.EncodeToString(signingKey.Seed()),
			"NATS_URL": c.natsURLs, "NATS_USER": "weir-controlplane", "NATS_PASSWORD": password("controlplane"), "NATS_CA": caFile,
			"WEIR_NATS_REPLICAS": "3", "WEIR_TENANT_LOOPBACK_PORTS": strings.Join(loopback, ","),
		}, nil)
		work := filepath.Join(dir, name)
		if err := os.MkdirAll(work, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, pre := range cpUnit.pre {
			bin, args := command(t, pre, filepath.Join(work, "etc"))
			cs := &system{t: t, env: env}
			if out, err := cs.run(ctx, nil, bin, args...); err != nil {
				t.Fatalf("%s: %s %v: %v\n%s", name, bin, args, err, out)
			}
		}
		bin, args := command(t, cpUnit.start, filepath.Join(work, "etc"))
		c.cps[i] = &proc{name: name, bin: bin, args: args, env: env, dir: work, logPath: filepath.Join(dir, "logs", name+".log")}
		if err := c.cps[i].start(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range clusterCPs {
		c.waitCP(ctx, t, i)
	}
	c.lb = newBalancer(c.cpAddr[:])
	s.cpURL = "https://" + c.lb.addr()

	// The CLI and the control plane's bootstrap run with the CA trusted
	// (SSL_CERT_FILE is where Go finds roots on Linux).
	s.env = childEnv(map[string]string{"DATABASE_URL": s.dbDSN, "WEIR_CONFIG_DIR": s.cliDir, "SSL_CERT_FILE": caFile})
	out, err := s.run(ctx, nil, bins.controlplane, "bootstrap-admin")
	if err != nil {
		t.Fatalf("controlplane bootstrap-admin: %v\n%s", err, out)
	}
	s.token = strings.TrimSpace(out)

	for i := range s.fakes {
		s.fakes[i] = s.newProc("fake-"+memberNames[i], bins.fakeprovider, "-addr", fakeAddr[i], "-flavor", "openai",
			"-rpm", "100000", "-itpm", "100000000", "-otpm", "100000000", "-latency", "10ms", "-token-delay", "4ms")
		if err := s.fakes[i].start(); err != nil {
			t.Fatal(err)
		}
		s.waitUp(ctx, s.fakes[i], "fake provider", func() error { return dial(fakeAddr[i]) })
	}
	s.seed(ctx)
	s.mustWeir(ctx, nil, "budget", "set", "cluster-total", "--limit", clusterBudget, "--period", "total")

	// The edges: deploy/env/edge.env and the edge unit's command.
	edgeUnit := readUnit(t, "weir-edge.service")
	for i := range clusterEdges {
		id := edgeIDs[i]
		addr := freeAddr(t)
		c.edgeURL[i] = "https://" + addr
		env := envFor(t, "edge.env", map[string]string{
			"WEIR_EDGE_ID": id, "WEIR_EDGE_LISTEN": addr, "WEIR_EDGE_TLS_CERT": certFile, "WEIR_EDGE_TLS_KEY": keyFile,
			"WEIR_EDGE_ADMIN_LISTEN": freeAddr(t), "WEIR_EDGE_STATE_DIR": filepath.Join(dir, id),
			"WEIR_EDGE_KEY": edgeKey, "WEIR_CONFIG_PUBLIC_KEY": publicKey,
			"NATS_URL": c.natsURLs, "NATS_USER": id, "NATS_PASSWORD": password("edge-" + id), "NATS_CA": caFile,
		}, nil)
		bin, args := command(t, edgeUnit.start, filepath.Join(dir, id, "etc"))
		c.edges[i] = &proc{name: id, bin: bin, args: args, env: env, logPath: filepath.Join(dir, "logs", id+".log")}
		if err := c.edges[i].start(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range clusterEdges {
		c.waitEdge(ctx, t, i)
	}
	return c
}

// stopAll kills every process and stops Postgres; on failure it prints
// the end of every log.
func (c *clusterSys) stopAll() {
	var all []*proc
	all = append(all, c.edges[:]...)
	all = append(all, c.cps[:]...)
	all = append(all, c.fakes[:]...)
	all = append(all, c.nats[:]...)
	for _, p := range all {
		if p != nil {
			p.kill()
		}
	}
	if c.lb != nil {
		c.lb.close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := pgserver.Stop(ctx, c.pgOpts); err != nil {
		c.t.Errorf("stop PostgreSQL: %v", err)
	}
	if c.proxy != nil {
		c.proxy.close()
	}
	if c.t.Failed() {
		c.dumpLogs()
	}
}

// natsHealthy asks node i's monitoring port whether JetStream is ready.
func (c *clusterSys) natsHealthy(i int) error {
	resp, err := http.Get("http://" + c.natsMon[i] + "/healthz?js-enabled-only=true")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthz: %d %s", resp.StatusCode, b)
	}
	return nil
}

// busiestNATS is the running node with the most edge connections.
func (c *clusterSys) busiestNATS(t *testing.T) int {
	t.Helper()
	best, most := -1, -1
	for i := range clusterNATS {
		resp, err := http.Get("http://" + c.natsMon[i] + "/connz?auth=true&limit=1000")
		if err != nil {
			continue
		}
		var cz struct {
			Connections []struct {
				User string `json:"authorized_user"`
			} `json:"connections"`
		}
		err = json.NewDecoder(resp.Body).Decode(&cz)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("connz of nats-%d: %v", i+1, err)
		}
		n := 0
		for _, conn := range cz.Connections {
			if strings.HasPrefix(conn.User, "edge-") {
				n++
			}
		}
		if n > most {
			best, most = i, n
		}
	}
	if most <= 0 {
		t.Fatal("no NATS node has an edge connected")
	}
	t.Logf("nats-%d has %d of %d edges: it is killed first", best+1, most, clusterEdges)
	return best
}

// waitCP waits until control plane i says SERVING over TLS.
func (c *clusterSys) waitCP(ctx context.Context, t *testing.T, i int) {
	t.Helper()
	c.waitUp(ctx, c.cps[i], "control plane", func() error {
		req, _ := http.NewRequest(http.MethodPost, "https://"+c.cpAddr[i]+"/grpc.health.v1.Health/Check", strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte("SERVING")) || bytes.Contains(b, []byte("NOT_SERVING")) {
			return fmt.Errorf("health: %d %s", resp.StatusCode, b)
		}
		return nil
	})
}

// waitEdge waits until edge i serves the pool's model, and marks it live.
func (c *clusterSys) waitEdge(ctx context.Context, t *testing.T, i int) {
	t.Helper()
	c.waitUp(ctx, c.edges[i], "edge", func() error { return c.modelListed(i, poolModel) })
	c.edgeLive[i].Store(true)
}

// modelListed reports whether edge i lists model for the tenant's key.
func (c *clusterSys) modelListed(i int, model string) error {
	req, _ := http.NewRequest(http.MethodGet, c.edgeURL[i]+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"id":"`+model+`"`)) {
		return fmt.Errorf("/v1/models: %d, %s not listed", resp.StatusCode, model)
	}
	return nil
}

// startLoad sends clusterRate calls a second, round robin over the live
// edges, tagged with the phase of the moment; stop waits for the calls in
// flight.
func (c *clusterSys) startLoad(col *collector, phase *atomic.Value) (stop func()) {
	stopc := make(chan struct{})
	var wg sync.WaitGroup
	var once sync.Once
	wg.Go(func() {
		tick := time.NewTicker(time.Second / clusterRate)
		defer tick.Stop()
		for {
			select {
			case <-stopc:
				return
			case <-tick.C:
			}
			seq := col.next()
			edge := seq % clusterEdges
			if !c.edgeLive[edge].Load() {
				continue
			}
			p := phase.Load().(string)
			wg.Go(func() {
				r := chat(context.Background(), c.client, c.edgeURL[edge], c.key, poolModel, seq%2 == 1, seq, nil)
				r.edge, r.phase = edge, p
				col.add(r)
			})
		}
	})
	return func() {
		once.Do(func() {
			close(stopc)
			wg.Wait()
		})
	}
}

// changesPerWindow is how many CLI changes are timed during a fault and
// after it.
const changesPerWindow = 5

// propagate makes n CLI changes one after another and returns how long
// each took from the CLI's exit until every live edge served it.
func (c *clusterSys) propagate(ctx context.Context, t *testing.T, tag string, n int) []time.Duration {
	t.Helper()
	var out []time.Duration
	for i := range n {
		model := fmt.Sprintf("cluster-%s-%d", tag, i)
		before, _ := c.configSeq(ctx)
		if b, err := c.weir(ctx, nil, "provider", "set", poolName, "--models", poolModel+","+model); err != nil {
			t.Fatalf("%s: weir provider set: %v\n%s", tag, err, b)
		}
		published := make(chan time.Duration, 1)
		go func() { published <- c.waitPublished(ctx, before, 60*time.Second) }()
		took := c.waitServed(ctx, t, model, 60*time.Second)
		if took > 2*time.Second { // say where the time went
			t.Logf("%s change %d: in WEIR_CONFIG %s after the CLI exited, served by every live edge %s after", tag, i,
				(<-published).Round(time.Millisecond), took.Round(time.Millisecond))
			if os.Getenv("WEIR_CLUSTER_DEBUG") != "" {
				for _, e := range c.edges {
					for line := range strings.Lines(tail(e.logPath, 30)) {
						if strings.Contains(line, "config") || strings.Contains(line, "NATS") {
							t.Logf("%s: %s", e.name, strings.TrimSpace(line))
						}
					}
				}
			}
		}
		out = append(out, took)
	}
	return out
}

// configSeq is WEIR_CONFIG's last revision; false when NATS does not say.
func (c *clusterSys) configSeq(ctx context.Context) (uint64, bool) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st, err := c.js.Stream(ctx, "KV_WEIR_CONFIG")
	if err != nil {
		return 0, false
	}
	return st.CachedInfo().State.LastSeq, true
}

// waitPublished is how long until WEIR_CONFIG's last revision is past
// before (-1 when not within d).
func (c *clusterSys) waitPublished(ctx context.Context, before uint64, d time.Duration) time.Duration {
	start := time.Now()
	for time.Since(start) < d {
		if seq, ok := c.configSeq(ctx); ok && seq > before {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return -1
}

// afterFault runs the load a few seconds after a fault's recovery, timing
// CLI changes meanwhile.
func (c *clusterSys) afterFault(ctx context.Context, t *testing.T, tag string) []time.Duration {
	t.Helper()
	start := time.Now()
	took := c.propagate(ctx, t, tag+"-after", changesPerWindow)
	time.Sleep(3*time.Second - time.Since(start))
	return took
}

// waitServed waits until every live edge lists model.
func (c *clusterSys) waitServed(ctx context.Context, t *testing.T, model string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for i := range clusterEdges {
		if !c.edgeLive[i].Load() {
			continue
		}
		if err := waitFor(ctx, within, 10*time.Millisecond, func() error { return c.modelListed(i, model) }); err != nil {
			t.Fatalf("edge-%d does not serve %s: %v", i+1, model, err)
		}
	}
	return time.Since(start)
}

// singletonHolder is the control plane that logged taking the singleton
// jobs last.
func (c *clusterSys) singletonHolder(t *testing.T) int {
	t.Helper()
	holder, latest := -1, time.Time{}
	for i, p := range c.cps {
		if at, ok := lastLogged(p.logPath, singletonMsg); ok && at.After(latest) {
			holder, latest = i, at
		}
	}
	if holder < 0 {
		t.Fatal("no control plane logged taking the singleton jobs")
	}
	return holder
}

// waitSingleton waits until control plane i logs taking the singleton
// jobs after since, and returns how long after since that was.
func (c *clusterSys) waitSingleton(t *testing.T, i int, since time.Time) time.Duration {
	t.Helper()
	var took time.Duration
	err := waitFor(context.Background(), 30*time.Second, 20*time.Millisecond, func() error {
		at, ok := lastLogged(c.cps[i].logPath, singletonMsg)
		if !ok || !at.After(since) {
			return errors.New("not yet")
		}
		took = at.Sub(since)
		return nil
	})
	if err != nil {
		t.Fatalf("%s did not take over the singleton jobs: %v", c.cps[i].name, err)
	}
	return took
}

// lastLogged is the time of the last line of the log at path that holds
// msg (slog's text or JSON "time" field).
func lastLogged(path, msg string) (time.Time, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, false
	}
	var at time.Time
	found := false
	for line := range strings.Lines(string(b)) {
		if !strings.Contains(line, msg) {
			continue
		}
		var ts string
		if strings.HasPrefix(line, "{") {
			var rec struct {
				Time string `json:"time"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil {
				ts = rec.Time
			}
		} else if v, ok := strings.CutPrefix(line, "time="); ok {
			ts, _, _ = strings.Cut(v, " ")
		}
		if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
			at, found = t, true
		}
	}
	return at, found
}

// waitViewsMirrored waits until member_views has a row written after since
// (the view mirror, a singleton job, runs again).
func (c *clusterSys) waitViewsMirrored(ctx context.Context, t *testing.T, since time.Time) time.Duration {
	t.Helper()
	err := waitFor(ctx, 30*time.Second, 50*time.Millisecond, func() error {
		return c.query(ctx, func(conn *pgx.Conn) error {
			var latest time.Time
			if err := conn.QueryRow(ctx, `SELECT coalesce(max(updated_at), 'epoch') FROM member_views`).Scan(&latest); err != nil {
				return err
			}
			if !latest.After(since) {
				return fmt.Errorf("latest view %s", latest)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatalf("views are not mirrored into Postgres again: %v", err)
	}
	return time.Since(since)
}

// reportPhase notes the call latency p50/p99 of the phase's calls that
// began during its fault (from until the system recovered at to) and of
// those after, the calls that failed, and how long a CLI change made
// during the fault took to reach every live edge.
func (c *clusterSys) reportPhase(note func(string, ...any), col *collector, name string, from, to time.Time, changesDuring, changesAfter []time.Duration) {
	var during, after []time.Duration
	var failed int
	for _, r := range col.all() {
		if r.phase != name {
			continue
		}
		if !r.success {
			failed++
			continue
		}
		if r.start.Before(to) {
			during = append(during, r.end.Sub(r.start))
		} else {
			after = append(after, r.end.Sub(r.start))
		}
	}
	note("%-12s %s to recover; calls during: %d ok (p50 %s, p99 %s), after: %d ok (p50 %s, p99 %s), failed %d; CLI change → every live edge during: p50 %s p99 %s (%d), after: p50 %s p99 %s (%d)",
		name, to.Sub(from).Round(time.Millisecond), len(during), percentile(during, 50).Round(time.Millisecond), percentile(during, 99).Round(time.Millisecond),
		len(after), percentile(after, 50).Round(time.Millisecond), percentile(after, 99).Round(time.Millisecond), failed,
		percentile(changesDuring, 50).Round(time.Millisecond), percentile(changesDuring, 99).Round(time.Millisecond), len(changesDuring),
		percentile(changesAfter, 50).Round(time.Millisecond), percentile(changesAfter, 99).Round(time.Millisecond), len(changesAfter))
}

// edgeKill is an edge SIGKILLed at a moment: calls it held then may be
// recorded though their callers saw no whole answer.
type edgeKill struct {
	edge int
	at   time.Time
}

// checkpoint waits until every call a caller saw answered before now is
// recorded, and checks that nothing else is: a recorded call no caller saw
// answered must have been in flight on a killed edge at its kill.
func (c *clusterSys) checkpoint(ctx context.Context, t *testing.T, col *collector, phase string, killed *edgeKill) {
	t.Helper()
	cutoff := time.Now()
	answered := map[string]bool{}
	heldAtKill := 0
	for _, r := range col.all() {
		if r.end.After(cutoff) {
			continue
		}
		switch {
		case r.complete && r.callID == "":
			t.Errorf("%s: call %d answered %d without x-weir-call-id", phase, r.seq, r.status)
		case r.complete:
			if answered[r.callID] {
				t.Errorf("%s: call id %s answered twice", phase, r.callID)
			}
			answered[r.callID] = true
		case killed != nil && r.edge == killed.edge && r.start.Before(killed.at) && !r.end.Before(killed.at):
			heldAtKill++
		}
	}
	var got map[string]recorded
	err := waitFor(ctx, 90*time.Second, 250*time.Millisecond, func() error {
		var err error
		if got, err = c.recordedCalls(ctx); err != nil {
			return err
		}
		missing := 0
		for id := range answered {
			if _, ok := got[id]; !ok {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d answered calls not recorded", missing, len(answered))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", phase, err)
	}
	extra := 0
	for id, r := range got {
		if !answered[id] && !r.startedAt.After(cutoff.Add(-callTimeout)) {
			extra++
		}
	}
	if extra > heldAtKill {
		t.Errorf("%s: %d recorded calls no caller saw answered, but only %d were in flight on a killed edge", phase, extra, heldAtKill)
	}
	t.Logf("%-12s %d answered calls, every one recorded once (%d recorded in all)", phase, len(answered), len(got))
}

// checkBudget: the budget's spend is the sum of the recorded calls' costs,
// each counted once across both control planes' ingest.
func (c *clusterSys) checkBudget(ctx context.Context, t *testing.T) {
	t.Helper()
	err := waitFor(ctx, 30*time.Second, 200*time.Millisecond, func() error {
		return c.query(ctx, func(conn *pgx.Conn) error {
			var spent, costs, n int64
			if err := conn.QueryRow(ctx, `SELECT b.spent_nanos,
				(SELECT coalesce(sum(cost_nanos), 0) FROM calls WHERE tenant_id = b.tenant_id),
				(SELECT count(*) FROM calls WHERE tenant_id = b.tenant_id)
				FROM budgets b JOIN tenants t ON t.id = b.tenant_id WHERE t.name = $1`, c.tenant).Scan(&spent, &costs, &n); err != nil {
				return err
			}
			if spent != costs || costs == 0 {
				return fmt.Errorf("budget spent %d nano-dollars, the %d recorded calls cost %d", spent, n, costs)
			}
			t.Logf("budget: %d calls, spent %d nano-dollars = the sum of their costs", n, spent)
			return nil
		})
	})
	if err != nil {
		t.Error(err)
	}
}

// checkLeases: at no moment did the open leases of the budget promise more
// than its limit, though two control planes granted them.
func (c *clusterSys) checkLeases(ctx context.Context, t *testing.T) {
	t.Helper()
	type event struct {
		at    time.Time
		delta int64
	}
	var events []event
	var limit int64
	grantedBy := 0
	err := c.query(ctx, func(conn *pgx.Conn) error {
		if err := conn.QueryRow(ctx, `SELECT b.limit_nanos FROM budgets b JOIN tenants t ON t.id = b.tenant_id WHERE t.name = $1`, c.tenant).Scan(&limit); err != nil {
			return err
		}
		rows, err := conn.Query(ctx, `SELECT l.granted_nanos, l.created_at, coalesce(l.closed_at, now() + interval '1 day') FROM budget_leases l
			JOIN budgets b ON b.id = l.budget_id JOIN tenants t ON t.id = b.tenant_id WHERE t.name = $1`, c.tenant)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var g int64
			var from, to time.Time
			if err := rows.Scan(&g, &from, &to); err != nil {
				return err
			}
			grantedBy++
			events = append(events, event{from, g}, event{to, -g})
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if grantedBy == 0 {
		t.Fatal("no budget lease was granted: the budget was not exercised")
	}
	slices.SortFunc(events, func(a, b event) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return int(min(max(a.delta, -1), 1)) // closings before grants at the same instant
	})
	var open, most int64
	for _, e := range events {
		open += e.delta
		most = max(most, open)
	}
	if most > limit {
		t.Errorf("open leases promised %d nano-dollars at once, over the budget's %d", most, limit)
	}
	t.Logf("leases: %d granted; at most %d of %d nano-dollars promised at once", grantedBy, most, limit)
}

// balancer is the load balancer in front of the control planes: each
// connection goes to the next backend that accepts it.
type balancer struct {
	ln       net.Listener
	backends []string
	next     atomic.Int64
	wg       sync.WaitGroup
}

func newBalancer(backends []string) *balancer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	b := &balancer{ln: ln, backends: backends}
	b.wg.Go(b.accept)
	return b
}

func (b *balancer) addr() string { return b.ln.Addr().String() }

func (b *balancer) accept() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		go b.serve(c)
	}
}

func (b *balancer) serve(c net.Conn) {
	defer c.Close()
	var up net.Conn
	for range b.backends {
		addr := b.backends[int(b.next.Add(1))%len(b.backends)]
		var err error
		if up, err = net.DialTimeout("tcp", addr, time.Second); err == nil {
			break
		}
	}
	if up == nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

func (b *balancer) close() { _ = b.ln.Close() }
