package systest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
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
	"google.golang.org/protobuf/proto"

	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// TestSecurity attacks the running system from outside — NATS, the edge's
// gateway and admin listeners, the control plane's admin API — and checks
// that each defence of SECURITY.md holds end to end. Every subtest logs what
// it measured.
//
// The system is the one of startSystem, with two changes made here: edge-2
// is restarted with a short --body-timeout, a small --max-body and its
// admin (metrics) listener on one of the loopback ports the control plane
// opens to tenant records (R-SEC-2: only the edge's own dial guard stands
// between a tenant record and that port); and a fake upstream in this
// process (secUpstream) listens on the other such port, counting what it
// receives and holding slow streams.
func TestSecurity(t *testing.T) {
	s := startSystem(t, "sec", 0)
	e := newSecEnv(t, s)
	// The control plane's body-read deadline is 30 s and has no flag: the
	// trickle runs in the background from the start and is checked last.
	trickle := e.startCPTrickle()

	t.Run("NATS/unauthenticated client refused", e.testNATSUnauthenticated)
	t.Run("NATS/edge credentials cannot write config or commands", e.testNATSEdgeCredentials)
	t.Run("NATS/forged snapshot ignored and repaired", e.testForgedSnapshot)
	t.Run("edge/declared 32 MB bodies never sent", e.testEdgeDeclaredBodies)
	t.Run("edge/body over --max-body is 413", e.testEdgeMaxBody)
	t.Run("edge/trickled body is 408 after --body-timeout", e.testEdgeTrickle)
	t.Run("admin API/200 MB unauthenticated bodies not read", e.testCPHugeBodies)
	t.Run("admin API/gzip bomb", e.testCPGzipBomb)
	t.Run("R-SEC-5/case-variant and duplicate model", e.testOneReadingRSEC5)
	t.Run("R-SEC-6/provider error echoing the key is redacted", e.testRedactionRSEC6)
	t.Run("R-SEC-2/record aimed at the edge's admin port", e.testAdminPortRSEC2)
	t.Run("slow streams/tenant B latency while tenant A holds 50 streams", e.testSlowStreamsLatency)
	t.Run("R-CAP-2/tenant flood refused weir_tenant_limit, tenant B stays fast", e.testTenantFloodRCAP2)
	t.Run("admin API/trickled body cut by the read deadline", func(t *testing.T) { e.checkCPTrickle(t, trickle) })
}

// Settings of the restarted edge-2 (edge-1 keeps the binary's defaults:
// --max-body 32 MiB, --body-timeout 60 s).
const (
	secMaxBody     = 1 << 20
	secBodyTimeout = 3 * time.Second
	// cpBodyReadTimeout is the control plane's body-read deadline
	// (controlplane/internal/server DefaultBodyReadTimeout; no flag sets it).
	cpBodyReadTimeout = 30 * time.Second
	// rssBound is the growth of a process's resident memory an attack may
	// cause: far below what holding any one attack body whole would take.
	rssBound = 64 << 20
)

// Names the security test gives the system.
const (
	secRecord   = "sec-up"                  // tenant sec's record on secUpstream: models cheap, pricey, slow, leaky
	providerKey = "sk-systest-provider-key" // the value of secret sys-provider-key (startSystem's seed)
	tenantB     = "sec-b"                   // the other tenant of the slow-streams subtest
	recordB     = "b-up"                    // its record, on the first fake provider
	tenantAdmin = "sec-tadm"                // an admin holding only ROLE_TENANT_ADMIN on sec
	probeModel  = "admin-probe"
)

// secEnv is the system under attack and what the security test added.
type secEnv struct {
	s         *system
	up        *secUpstream
	tenantID  string    // tenant sec's id (its WEIR_CONFIG key is tenant.<id>)
	cheapKey  string    // a key of tenant sec allowed only model cheap
	keyB      string    // tenant B's key
	edgeAdmin [2]string // host:port of each edge's admin listener
	pub       ed25519.PublicKey
	client    *http.Client
}

func newSecEnv(t *testing.T, s *system) *secEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := &secEnv{s: s, client: &http.Client{Timeout: 30 * time.Second}}
	pub, err := base64.StdEncoding.DecodeString(envValue(s.env, "WEIR_CONFIG_PUBLIC_KEY"))
	if err != nil || len(pub) != ed25519.PublicKeySize {
		t.Fatalf("the system's config public key: %v", err)
	}
	e.pub = pub

	e.up = startSecUpstream(t, s.spare[0], time.Second)

	// edge-2 again, with short body limits and its admin listener on the
	// second spare port, which tenant records may use (R-SEC-2).
	s.edges[1].kill()
	s.edges[1].args = append(replaceFlag(s.edges[1].args, "--admin-listen", s.spare[1]),
		"--body-timeout", secBodyTimeout.String(), "--max-body", strconv.Itoa(secMaxBody))
	if err := s.edges[1].start(); err != nil {
		t.Fatal(err)
	}
	for i := range s.edges {
		e.edgeAdmin[i] = flagValue(s.edges[i].args, "--admin-listen")
	}

	// Tenant sec (the system's tenant, the CLI's default): a record on the
	// fake upstream and a key allowed only model cheap.
	upURL := "http://" + s.spare[0] + "/v1"
	limits := []string{"--rpm", "100000", "--input-tpm", "100000000", "--output-tpm", "100000000"}
	s.mustWeir(ctx, nil, append([]string{"provider", "create", secRecord, "--preset", "openai", "--base-url", upURL,
		"--models", "cheap,pricey,slow,leaky", "--key-secret", "sys-provider-key",
		"--price", "cheap=0.1,0.1,0.1", "--price", "pricey=100,100,100", "--price", "slow=0.1,0.1,0.1", "--price", "leaky=0.1,0.1,0.1"}, limits...)...)
	e.cheapKey = strings.TrimSpace(s.mustWeir(ctx, nil, "key", "create", "cheap-only", "--allow-model", "cheap"))

	// Tenant B: its own secret, a record on the first fake provider, a key.
	s.mustWeir(ctx, nil, "tenant", "create", tenantB)
	s.mustWeir(ctx, strings.NewReader(providerKey), "secret", "set", "b-provider-key", "--host", "127.0.0.1", "--tenant", tenantB)
	s.mustWeir(ctx, nil, append([]string{"provider", "create", recordB, "--preset", "openai",
		"--base-url", fmt.Sprintf("http://127.0.0.1:%d/v1", s.fakeP[0]), "--models", poolModel, "--key-secret", "b-provider-key",
		"--price", poolModel + "=0.15,0.6,0.075", "--tenant", tenantB}, limits...)...)
	e.keyB = strings.TrimSpace(s.mustWeir(ctx, nil, "key", "create", "b", "--tenant", tenantB))

	err = s.query(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT id::text FROM tenants WHERE name = $1`, s.tenant).Scan(&e.tenantID)
	})
	if err != nil {
		t.Fatalf("tenant id: %v", err)
	}

	s.waitEdgeServes(ctx, 1)
	for i := range s.edges {
		for _, w := range []struct{ key, model string }{{s.key, "slow"}, {e.cheapKey, "cheap"}, {e.keyB, poolModel}} {
			s.waitUp(ctx, s.edges[i], "edge", func() error { return e.modelListed(i, w.key, w.model) })
		}
	}
	return e
}

// modelListed reports whether edge i lists model for key in GET /v1/models.
func (e *secEnv) modelListed(i int, key, model string) error {
	req, _ := http.NewRequest(http.MethodGet, e.s.edgeU[i]+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := e.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"id":"`+model+`"`)) {
		return fmt.Errorf("edge-%d /v1/models: %d %s, want %s listed", i+1, resp.StatusCode, b, model)
	}
	return nil
}

// realKeyWorks fails t unless a chat completion with the tenant's key
// succeeds on both edges.
func (e *secEnv) realKeyWorks(t *testing.T) {
	t.Helper()
	for i := range e.s.edges {
		r := chat(context.Background(), e.client, e.s.edgeU[i], e.s.key, poolModel, false, 0, nil)
		if !r.success {
			t.Errorf("a call with the real key on edge-%d: status %d, error %v, body %.300s", i+1, r.status, r.err, r.body)
		}
	}
}

// ---- 1. NATS without credentials ----

func (e *secEnv) testNATSUnauthenticated(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []nats.Option
	}{
		{"no credentials", nil},
		{"edge-1 with a wrong password", []nats.Option{nats.UserInfo("edge-1", "wrong-"+e.s.nats.edgePasswords["edge-1"])}},
		{"control plane with a wrong password", []nats.Option{nats.UserInfo("weir-controlplane", "guess")}},
		{"an unknown user", []nats.Option{nats.UserInfo("mallory", "x")}},
	} {
		start := time.Now()
		nc, err := nats.Connect(e.s.nats.url(), append([]nats.Option{nats.Name("systest-attacker"), nats.NoReconnect(), nats.Timeout(5 * time.Second)}, c.opts...)...)
		took := time.Since(start)
		if err == nil {
			nc.Close()
			t.Errorf("%s: connected, want refused", c.name)
			continue
		}
		if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(strings.ToLower(err.Error()), "authorization") {
			t.Errorf("%s: %v, want an authorization violation", c.name, err)
		}
		t.Logf("%-36s refused in %v: %v", c.name, took.Round(time.Millisecond), err)
	}
}

// ---- 2. An edge's credentials ----

// permErrors collects the permission violations the server reports to a
// connection, by subject.
type permErrors struct {
	mu   sync.Mutex
	errs []string
}

func (p *permErrors) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	if errors.Is(err, nats.ErrPermissionViolation) {
		p.mu.Lock()
		p.errs = append(p.errs, err.Error())
		p.mu.Unlock()
	}
}

// about reports whether a violation naming subject was reported.
func (p *permErrors) about(subject string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.ContainsFunc(p.errs, func(s string) bool { return strings.Contains(s, `"`+subject+`"`) })
}

func (e *secEnv) testNATSEdgeCredentials(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfgKey := "tenant." + e.tenantID
	// What the control plane sees before the attack.
	cp := e.cpJetStream(t)
	cpCfg, err := cp.KeyValue(ctx, "WEIR_CONFIG")
	if err != nil {
		t.Fatal(err)
	}
	before, err := cpCfg.Get(ctx, cfgKey)
	if err != nil {
		t.Fatal(err)
	}
	var cmds atomic.Int64
	sub, err := cp.Conn().Subscribe("weir.cmd.>", func(*nats.Msg) { cmds.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := cp.Conn().Flush(); err != nil {
		t.Fatal(err)
	}

	// edge-1's user, as the system created it.
	perms := &permErrors{}
	nc, err := nats.Connect(e.s.nats.url(), nats.Name("systest-edge-1-stolen"), nats.NoReconnect(),
		nats.UserInfo("edge-1", e.s.nats.edgePasswords["edge-1"]), nats.ErrorHandler(perms.handler))
	if err != nil {
		t.Fatalf("edge-1's credentials: %v", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cfgKV, err := js.KeyValue(ctx, "WEIR_CONFIG")
	if err != nil {
		t.Fatalf("edge-1 may read WEIR_CONFIG: %v", err)
	}
	viewsKV, err := js.KeyValue(ctx, "WEIR_VIEWS")
	if err != nil {
		t.Fatalf("edge-1 may read WEIR_VIEWS: %v", err)
	}
	// What an edge may do works over this connection: the refusals below
	// are its permissions, not a broken connection.
	if _, err := cfgKV.Get(ctx, cfgKey); err != nil {
		t.Errorf("edge-1 reading its config: %v", err)
	}
	ownView := e.tenantID + ".probe.probe.edge-1"
	if err := viewsKV.Delete(ctx, ownView); err != nil {
		t.Errorf("edge-1 writing its own view key %s: %v", ownView, err)
	}

	otherView := e.tenantID + ".probe.probe.edge-2"
	attacks := []struct {
		name    string
		subject string // the subject the server refuses
		do      func(context.Context) error
	}{
		{"put a WEIR_CONFIG entry", "$KV.WEIR_CONFIG." + cfgKey, func(ctx context.Context) error {
			_, err := cfgKV.Put(ctx, cfgKey, []byte("forged"))
			return err
		}},
		{"delete a WEIR_CONFIG entry", "$KV.WEIR_CONFIG." + cfgKey, func(ctx context.Context) error { return cfgKV.Delete(ctx, cfgKey) }},
		{"create a bucket", "$JS.API.STREAM.CREATE.KV_SYSTEST_EVIL", func(ctx context.Context) error {
			_, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "SYSTEST_EVIL"})
			return err
		}},
		{"create a stream", "$JS.API.STREAM.CREATE.SYSTEST_EVIL_STREAM", func(ctx context.Context) error {
			_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SYSTEST_EVIL_STREAM", Subjects: []string{"systest.evil.>"}})
			return err
		}},
		{"put edge-2's WEIR_VIEWS key", "$KV.WEIR_VIEWS." + otherView, func(ctx context.Context) error {
			_, err := viewsKV.Put(ctx, otherView, []byte{})
			return err
		}},
		{"publish on weir.cmd.revoke", "weir.cmd.revoke", func(context.Context) error {
			if err := nc.Publish("weir.cmd.revoke", []byte("forged")); err != nil {
				return err
			}
			return nc.Flush()
		}},
	}
	// Refused writes get no acknowledgement: each waits out its timeout,
	// so they run at once.
	var wg sync.WaitGroup
	errs := make([]error, len(attacks))
	took := make([]time.Duration, len(attacks))
	for i, a := range attacks {
		wg.Go(func() {
			actx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			start := time.Now()
			errs[i] = a.do(actx)
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	for i, a := range attacks {
		if a.subject != "weir.cmd.revoke" && errs[i] == nil {
			t.Errorf("%s: succeeded with edge-1's credentials", a.name)
		}
	}
	// Every attempt is reported as a permission violation of its subject
	// (the core publish only so: it has no reply).
	err = waitFor(ctx, 10*time.Second, 20*time.Millisecond, func() error {
		for _, a := range attacks {
			if !perms.about(a.subject) {
				return fmt.Errorf("no permission violation reported for %s (%s)", a.name, a.subject)
			}
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	for i, a := range attacks {
		t.Logf("%-30s refused after %v: %v; permission violation reported: %t", a.name, took[i].Round(time.Millisecond), errs[i], perms.about(a.subject))
	}

	// Nothing changed: the entry, the buckets and streams, edge-2's views,
	// the commands the edges receive, and the config the edges serve.
	after, err := cpCfg.Get(ctx, cfgKey)
	if err != nil {
		t.Fatal(err)
	}
	if after.Revision() != before.Revision() || !bytes.Equal(after.Value(), before.Value()) {
		t.Errorf("WEIR_CONFIG %s changed: revision %d → %d", cfgKey, before.Revision(), after.Revision())
	}
	if _, err := cp.KeyValue(ctx, "SYSTEST_EVIL"); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Errorf("bucket SYSTEST_EVIL: %v, want not found", err)
	}
	if _, err := cp.Stream(ctx, "SYSTEST_EVIL_STREAM"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("stream SYSTEST_EVIL_STREAM: %v, want not found", err)
	}
	cpViews, err := cp.KeyValue(ctx, "WEIR_VIEWS")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cpViews.Get(ctx, otherView); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("edge-2's view key %s: %v, want not found", otherView, err)
	}
	if err := cp.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	if n := cmds.Load(); n != 0 {
		t.Errorf("%d messages reached weir.cmd.> from edge-1's credentials", n)
	}
	e.realKeyWorks(t)
	t.Logf("WEIR_CONFIG %s still at revision %d; weir.cmd.> received %d messages", cfgKey, after.Revision(), cmds.Load())
}

// cpJetStream is a JetStream connection with the control plane's
// credentials, closed when the test ends.
func (e *secEnv) cpJetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(e.s.nats.url(), nats.Name("systest-cp"), e.s.nats.controlPlaneAuth())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// ---- 3. A forged snapshot ----

func (e *secEnv) testForgedSnapshot(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	key := "tenant." + e.tenantID
	js := e.cpJetStream(t)
	kv, err := js.KeyValue(ctx, "WEIR_CONFIG")
	if err != nil {
		t.Fatal(err)
	}
	entry, err := kv.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := openSnapshot(e.pub, key, entry.Value())
	if err != nil {
		t.Fatalf("the published snapshot does not verify: %v", err)
	}
	var snap configv1.TenantSnapshot
	if err := proto.Unmarshal(payload, &snap); err != nil {
		t.Fatal(err)
	}
	// The forgery: the real snapshot, a version no real one reaches (an
	// edge taking it would keep it over every later real one) and one
	// more API key.
	forgedKey := "sk-weir-forged-" + hex.EncodeToString(randomBytes(t, 12))
	sum := sha256.Sum256([]byte(forgedKey))
	forged := proto.Clone(&snap).(*configv1.TenantSnapshot)
	forged.Version = 1 << 60
	forged.ApiKeys = append(forged.ApiKeys, &configv1.ApiKey{Id: "forged", Name: "forged", Sha256: sum[:]})
	forgedPayload, err := proto.Marshal(forged)
	if err != nil {
		t.Fatal(err)
	}
	_, otherKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	envelope := func(sig []byte) []byte {
		b, err := proto.Marshal(&configv1.Signed{Payload: forgedPayload, Signature: sig})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, f := range []struct {
		name  string
		value []byte
	}{
		{"unsigned", envelope(nil)},
		{"signed with another key", envelope(ed25519.Sign(otherKey, signedMessage(key, forgedPayload)))},
		{"bare snapshot, no envelope", forgedPayload},
	} {
		refusedBefore := [2]int{e.edgeLogCount(0, "tenant snapshot refused"), e.edgeLogCount(1, "tenant snapshot refused")}
		rev, err := kv.Put(ctx, key, f.value)
		if err != nil {
			t.Fatalf("%s: put: %v", f.name, err)
		}
		put := time.Now()
		// The publisher puts its own signed snapshot back.
		var repairedRev uint64
		err = waitFor(ctx, 20*time.Second, 10*time.Millisecond, func() error {
			cur, err := kv.Get(ctx, key)
			if err != nil {
				return err
			}
			if cur.Revision() == rev {
				return errors.New("still the forged entry")
			}
			if _, err := openSnapshot(e.pub, key, cur.Value()); err != nil {
				return fmt.Errorf("revision %d: %w", cur.Revision(), err)
			}
			repairedRev = cur.Revision()
			return nil
		})
		repairedIn := time.Since(put)
		if err != nil {
			t.Errorf("%s: not repaired: %v", f.name, err)
		}
		// Each edge saw the forgery and refused it.
		for i := range e.s.edges {
			err := waitFor(ctx, 20*time.Second, 20*time.Millisecond, func() error {
				if n := e.edgeLogCount(i, "tenant snapshot refused"); n <= refusedBefore[i] {
					return fmt.Errorf("edge-%d logged no refusal", i+1)
				}
				return nil
			})
			if err != nil {
				t.Errorf("%s: %v", f.name, err)
			}
		}
		// The forged key is unknown on both edges; the real key works.
		for i := range e.s.edges {
			r := chat(ctx, e.client, e.s.edgeU[i], forgedKey, poolModel, false, 0, nil)
			code := ""
			if r.complete {
				code = errorCode(r.body)
			}
			if r.status != http.StatusUnauthorized || code != "invalid_api_key" {
				t.Errorf("%s: the forged key on edge-%d: %d %q %.200s, want 401 invalid_api_key", f.name, i+1, r.status, code, r.body)
			}
		}
		e.realKeyWorks(t)
		t.Logf("forged %-28s put at revision %d: re-signed by the control plane at revision %d after %v; both edges refused it; forged key → 401 invalid_api_key",
			f.name, rev, repairedRev, repairedIn.Round(time.Millisecond))
	}
}

// openSnapshot verifies a WEIR_CONFIG value as the edges do.
func openSnapshot(pub ed25519.PublicKey, key string, raw []byte) ([]byte, error) {
	var env configv1.Signed
	if err := proto.Unmarshal(raw, &env); err != nil {
		return nil, fmt.Errorf("not an envelope: %w", err)
	}
	if !ed25519.Verify(pub, signedMessage(key, env.GetPayload()), env.GetSignature()) {
		return nil, errors.New("not signed by the control plane")
	}
	return env.GetPayload(), nil
}

// signedMessage is what the control plane's signature covers
// (controlplane/internal/distrib/sign.go).
func signedMessage(name string, payload []byte) []byte {
	return slices.Concat([]byte("weir.signed.v1\n"+name+"\n"), payload)
}

// edgeLogCount is how many lines of edge i's log contain s.
func (e *secEnv) edgeLogCount(i int, s string) int {
	b, _ := os.ReadFile(e.s.edges[i].logPath)
	return bytes.Count(b, []byte(s))
}

// ---- 4. Bodies against the edge ----

// edgeHead is the head of a chat completion to the edge with key, declaring
// length (-1: chunked).
func edgeHead(key string, length int64) string {
	h := "POST /v1/chat/completions HTTP/1.1\r\nHost: edge\r\nAuthorization: Bearer " + key + "\r\nContent-Type: application/json\r\n"
	if length < 0 {
		return h + "Transfer-Encoding: chunked\r\n\r\n"
	}
	return h + "Content-Length: " + strconv.FormatInt(length, 10) + "\r\n\r\n"
}

func (e *secEnv) testEdgeDeclaredBodies(t *testing.T) {
	const conns, declared = 25, 32_000_000 // under edge-1's --max-body (32 MiB): the edge starts reading each
	addr := strings.TrimPrefix(e.s.edgeU[0], "http://")
	pid := e.s.edges[0].pid()
	before := mustMem(t, pid)
	watch := watchRSS(pid)
	var open []net.Conn
	defer func() {
		for _, c := range open {
			_ = c.Close()
		}
	}()
	for range conns {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
		if _, err := io.WriteString(c, edgeHead(e.s.key, declared)); err != nil {
			t.Fatal(err)
		}
	}
	// The edge holds the calls while their bodies do not come; a call of
	// another caller still goes through meanwhile.
	r := chat(context.Background(), e.client, e.s.edgeU[0], e.s.key, poolModel, false, 0, nil)
	if !r.success {
		t.Errorf("a call while %d bodies were pending: status %d, error %v", conns, r.status, r.err)
	}
	// Measured over two seconds of the connections held: the peak
	// resident size is what counts, not a moment of it.
	time.Sleep(2 * time.Second)
	stillOpen := 0
	for _, c := range open {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		var b [1]byte
		if _, err := c.Read(b[:]); errors.Is(err, os.ErrDeadlineExceeded) {
			stillOpen++
		}
	}
	peak := watch.end()
	after := mustMem(t, pid)
	growth := max(peak, after.rss) - before.rss
	t.Logf("edge-1: %d connections declaring %d MB each (%d MB in all), none sent: VmRSS %d → %d MB (peak %d MB, growth %.1f MB), VmHWM %d → %d MB; %d connections still held by the edge",
		conns, declared/1_000_000, conns*declared/1_000_000, before.rss>>20, after.rss>>20, peak>>20, float64(growth)/(1<<20), before.hwm>>20, after.hwm>>20, stillOpen)
	if growth > rssBound || after.hwm-before.hwm > rssBound {
		t.Errorf("edge-1's memory grew by %d MB (VmHWM by %d MB) for declared lengths, want < %d MB", growth>>20, (after.hwm-before.hwm)>>20, rssBound>>20)
	}
	if stillOpen != conns {
		t.Errorf("%d of %d connections still open after 2 s; the edge's --body-timeout is 60 s", stillOpen, conns)
	}
}

func (e *secEnv) testEdgeMaxBody(t *testing.T) {
	addr := strings.TrimPrefix(e.s.edgeU[1], "http://")
	pid := e.s.edges[1].pid()
	before := mustMem(t, pid)
	watch := watchRSS(pid)
	for _, c := range []struct {
		name string
		head string
		body func(io.Writer) error
	}{
		// Refused from its declared length, before any of it is read.
		{"declared 4 MiB", edgeHead(e.s.key, 4<<20), zeroBody(4 << 20)},
		// No length declared: cut when the read passes --max-body.
		{"chunked 8 MiB", edgeHead(e.s.key, -1), chunkedBody(8 << 20)},
	} {
		x := rawExchange(addr, c.head, c.body, 20*time.Second)
		if x.err != nil {
			t.Errorf("%s: %v", c.name, x.err)
			continue
		}
		if x.resp.StatusCode != http.StatusRequestEntityTooLarge || x.resp.Header.Get("X-Weir-Error") != "invalid_request" {
			t.Errorf("%s: %d %v %s, want 413 invalid_request", c.name, x.resp.StatusCode, x.resp.Header, x.body)
		}
		if !x.resp.Close {
			t.Errorf("%s: the connection is kept open after a refused body", c.name)
		}
		t.Logf("edge-2 (--max-body %d): %s → %d %s in %v, %.1f MB sent before the answer",
			secMaxBody, c.name, x.resp.StatusCode, x.resp.Header.Get("X-Weir-Error"), x.took.Round(time.Millisecond), float64(x.sent)/(1<<20))
	}
	peak := watch.end()
	after := mustMem(t, pid)
	t.Logf("edge-2: VmRSS %d → %d MB (peak %d MB), VmHWM %d → %d MB", before.rss>>20, after.rss>>20, peak>>20, before.hwm>>20, after.hwm>>20)
	if g := max(peak, after.rss) - before.rss; g > rssBound {
		t.Errorf("edge-2's memory grew by %d MB", g>>20)
	}
}

func (e *secEnv) testEdgeTrickle(t *testing.T) {
	addr := strings.TrimPrefix(e.s.edgeU[1], "http://")
	const size = 100 // 100 s at a byte a second
	body := `{"model":"` + poolModel + `","messages":[{"role":"user","content":"` + strings.Repeat("a", size) + `"}]}`
	x := rawExchange(addr, edgeHead(e.s.key, int64(len(body))), func(w io.Writer) error {
		for i := range len(body) {
			if _, err := w.Write([]byte{body[i]}); err != nil {
				return err
			}
			time.Sleep(time.Second)
		}
		return nil
	}, secBodyTimeout+30*time.Second)
	if x.err != nil {
		t.Fatalf("trickled body: %v", x.err)
	}
	t.Logf("edge-2 (--body-timeout %v): body trickled at 1 byte/s → %d %s after %v, %d of %d bytes sent",
		secBodyTimeout, x.resp.StatusCode, x.resp.Header.Get("X-Weir-Error"), x.took.Round(time.Millisecond), x.sent, len(body))
	if x.resp.StatusCode != http.StatusRequestTimeout || x.resp.Header.Get("X-Weir-Error") != "invalid_request" {
		t.Errorf("answer %d %v %s, want 408 invalid_request", x.resp.StatusCode, x.resp.Header, x.body)
	}
	// The deadline runs from when the handler starts reading the body.
	if x.took < secBodyTimeout-500*time.Millisecond || x.took > secBodyTimeout+15*time.Second {
		t.Errorf("408 after %v, want about --body-timeout %v", x.took, secBodyTimeout)
	}
}

// ---- 4. Bodies against the control plane's admin API ----

// cpHead is the head of a Connect unary call of CreateTenant.
func (e *secEnv) cpHead(token string, length int64, extra string) string {
	h := fmt.Sprintf("POST /weir.admin.v1.TenantService/CreateTenant HTTP/1.1\r\nHost: cp\r\nContent-Type: application/proto\r\nConnect-Protocol-Version: 1\r\nContent-Length: %d\r\n", length)
	if token != "" {
		h += "Authorization: Bearer " + token + "\r\n"
	}
	return h + extra + "\r\n"
}

func (e *secEnv) cpAddr() string { return strings.TrimPrefix(e.s.cpURL, "http://") }

func (e *secEnv) testCPHugeBodies(t *testing.T) {
	const clients, size = 4, 200 << 20
	pid := e.s.cp.pid()
	before := mustMem(t, pid)
	watch := watchRSS(pid)
	var wg sync.WaitGroup
	results := make([]exchange, clients)
	for i := range clients {
		wg.Go(func() { results[i] = rawExchange(e.cpAddr(), e.cpHead("", size, ""), zeroBody(size), 30*time.Second) })
	}
	wg.Wait()
	peak := watch.end()
	after := mustMem(t, pid)
	var sent int64
	for i, x := range results {
		sent += x.sent
		if x.err != nil {
			t.Errorf("client %d: %v (after %.1f MB)", i, x.err, float64(x.sent)/(1<<20))
			continue
		}
		if x.resp.StatusCode != http.StatusUnauthorized || !bytes.Contains(x.body, []byte(`"code":"unauthenticated"`)) {
			t.Errorf("client %d: %d %s, want 401 unauthenticated", i, x.resp.StatusCode, x.body)
		}
		if x.sent > 24<<20 {
			t.Errorf("client %d: the control plane took %.1f MB of an unauthenticated body", i, float64(x.sent)/(1<<20))
		}
	}
	growth := max(peak, after.rss) - before.rss
	t.Logf("control plane: %d × %d MB unauthenticated bodies → 401; %.1f MB sent in all before the answers; VmRSS %d → %d MB (peak %d MB, growth %.1f MB), VmHWM %d → %d MB",
		clients, size>>20, float64(sent)/(1<<20), before.rss>>20, after.rss>>20, peak>>20, float64(growth)/(1<<20), before.hwm>>20, after.hwm>>20)
	if growth > rssBound {
		t.Errorf("the control plane's memory grew by %d MB", growth>>20)
	}
}

func (e *secEnv) testCPGzipBomb(t *testing.T) {
	const mib = 1024
	bomb := gzipBomb(t, mib)
	pid := e.s.cp.pid()
	for _, c := range []struct {
		name, token string
		status      int
		code        string
	}{
		{"without a token", "", http.StatusUnauthorized, "unauthenticated"},
		{"with a valid token", e.s.token, http.StatusTooManyRequests, "resource_exhausted"},
	} {
		before := mustMem(t, pid)
		watch := watchRSS(pid)
		x := rawExchange(e.cpAddr(), e.cpHead(c.token, int64(len(bomb)), "Content-Encoding: gzip\r\n"),
			func(w io.Writer) error { _, err := w.Write(bomb); return err }, 30*time.Second)
		peak := watch.end()
		after := mustMem(t, pid)
		if x.err != nil {
			t.Errorf("%s: %v", c.name, x.err)
			continue
		}
		if x.resp.StatusCode != c.status || !bytes.Contains(x.body, []byte(`"code":"`+c.code+`"`)) {
			t.Errorf("%s: %d %s, want %d %s", c.name, x.resp.StatusCode, x.body, c.status, c.code)
		}
		growth := max(peak, after.rss) - before.rss
		t.Logf("control plane: gzip bomb of %d KiB (%d MiB inflated) %s → %d in %v; VmRSS %d → %d MB (peak %d MB, growth %.1f MB), VmHWM %d → %d MB",
			len(bomb)>>10, mib, c.name, x.resp.StatusCode, x.took.Round(time.Millisecond), before.rss>>20, after.rss>>20, peak>>20, float64(growth)/(1<<20), before.hwm>>20, after.hwm>>20)
		if growth > rssBound {
			t.Errorf("%s: the control plane's memory grew by %d MB", c.name, growth>>20)
		}
	}
	// The bomb's CreateTenant never ran.
	var n int
	err := e.s.query(context.Background(), func(c *pgx.Conn) error {
		return c.QueryRow(context.Background(), `SELECT count(*) FROM tenants`).Scan(&n)
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("%d tenants after the bombs, want 2 (sec and %s)", n, tenantB)
	}
}

// gzipBomb is a gzip body of mib MiB of zeros, one gzip member per MiB
// (about 1 KiB each).
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

// cpTrickle is the outcome of the background trickle to the admin API.
type cpTrickle struct {
	x    exchange
	size int
}

// startCPTrickle sends an authenticated body to the admin API one byte a
// second, in the background.
func (e *secEnv) startCPTrickle() <-chan cpTrickle {
	const size = 120 // two minutes at a byte a second
	out := make(chan cpTrickle, 1)
	go func() {
		x := rawExchange(e.cpAddr(), e.cpHead(e.s.token, size, ""), func(w io.Writer) error {
			for range size {
				if _, err := w.Write([]byte{0}); err != nil {
					return err
				}
				time.Sleep(time.Second)
			}
			return nil
		}, cpBodyReadTimeout+45*time.Second)
		out <- cpTrickle{x: x, size: size}
	}()
	return out
}

func (e *secEnv) checkCPTrickle(t *testing.T, ch <-chan cpTrickle) {
	var r cpTrickle
	select {
	case r = <-ch:
	case <-time.After(cpBodyReadTimeout + time.Minute):
		t.Fatal("the trickle to the admin API neither ended nor timed out")
	}
	x := r.x
	answer := "no answer, the connection was closed"
	if x.resp != nil {
		answer = fmt.Sprintf("%d %.120s", x.resp.StatusCode, x.body)
	} else if x.err != nil && !x.closed {
		t.Fatalf("trickle: %v", x.err)
	}
	t.Logf("control plane (body-read deadline %v, no flag): body trickled at 1 byte/s ended after %v with %s; %d of %d bytes sent",
		cpBodyReadTimeout, x.took.Round(time.Millisecond), answer, x.sent, r.size)
	if x.took > cpBodyReadTimeout+15*time.Second || x.sent >= int64(r.size) {
		t.Errorf("the admin API held a trickled body for %v (%d of %d bytes)", x.took, x.sent, r.size)
	}
	if x.took < cpBodyReadTimeout-2*time.Second {
		t.Errorf("the trickle ended after %v, before the %v deadline: %v", x.took, cpBodyReadTimeout, x.err)
	}
}

// ---- 5. R-SEC-5: one reading of the body ----

func (e *secEnv) testOneReadingRSEC5(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	before := e.up.total()
	for _, c := range []struct{ name, body string }{
		{"case-variant MODEL", `{"model":"pricey","MODEL":"cheap",` + msgs + `}`},
		{"case-variant Model first", `{"Model":"cheap","model":"pricey",` + msgs + `}`},
		{"duplicate model", `{"model":"cheap","model":"pricey",` + msgs + `}`},
		{"escaped duplicate mod\\u0065l", `{"model":"cheap","mod\u0065l":"pricey",` + msgs + `}`},
		{"duplicate max_tokens", `{"model":"cheap","max_tokens":1,"max_tokens":100000,` + msgs + `}`},
		{"case-variant Stream", `{"model":"cheap","stream":false,"Stream":true,` + msgs + `}`},
	} {
		status, code, body := e.post(0, e.cheapKey, c.body)
		t.Logf("%-32s → %d %s", c.name, status, code)
		if status != http.StatusBadRequest || code != "invalid_request" {
			t.Errorf("%s: %d %s %s, want 400 invalid_request", c.name, status, code, body)
		}
	}
	if n := e.up.total() - before; n != 0 {
		t.Errorf("the upstream received %d requests from refused bodies", n)
	}
	// The key's restriction itself, and a body read one way, for scale.
	status, code, body := e.post(0, e.cheapKey, `{"model":"pricey",`+msgs+`}`)
	t.Logf("%-32s → %d %s", "model pricey (not allowed)", status, code)
	if status != http.StatusForbidden || code != "model_not_allowed_for_key" {
		t.Errorf("model pricey with the cheap-only key: %d %s %s, want 403 model_not_allowed_for_key", status, code, body)
	}
	if n := e.up.count("pricey"); n != 0 {
		t.Errorf("the upstream received %d requests for pricey", n)
	}
	status, _, body = e.post(0, e.cheapKey, `{"model":"cheap",`+msgs+`}`)
	if status != http.StatusOK || e.up.count("cheap") != 1 {
		t.Errorf("model cheap with the cheap-only key: %d %s; upstream saw %d calls for cheap, want 1", status, body, e.up.count("cheap"))
	}
	t.Logf("upstream received %d requests in all: %d for cheap (the one allowed call), %d for pricey", e.up.total()-before, e.up.count("cheap"), e.up.count("pricey"))
}

// R-SEC-6: a provider's 4xx answer is passed on as is (R-FAIL-8), but the
// member's key never reaches the caller: the fake upstream answers model
// leaky with a 400 whose body and a header echo the Authorization header it
// received.
func (e *secEnv) testRedactionRSEC6(t *testing.T) {
	seen := e.up.keySeen.Load()
	req, _ := http.NewRequest(http.MethodPost, e.s.edgeU[0]+"/v1/chat/completions",
		strings.NewReader(`{"model":"leaky","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+e.s.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var headers bytes.Buffer
	_ = resp.Header.Write(&headers)
	t.Logf("upstream 400 echoing its Authorization header → caller got %d, body %s, X-Upstream-Echo %q; upstream saw the key %d times",
		resp.StatusCode, bytes.TrimSpace(body), resp.Header.Get("X-Upstream-Echo"), e.up.keySeen.Load()-seen)
	if e.up.keySeen.Load() == seen {
		t.Fatalf("the upstream never received the provider key: the test proves nothing")
	}
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d, want the provider's 400 passed on", resp.StatusCode)
	}
	if bytes.Contains(body, []byte(providerKey)) || bytes.Contains(headers.Bytes(), []byte(providerKey)) {
		t.Errorf("the provider key reached the caller: headers %s body %s", headers.Bytes(), body)
	}
	if !bytes.Contains(body, []byte("[redacted]")) {
		t.Errorf("body %s, want the key replaced by [redacted]", body)
	}
}

// post sends a chat completion body with key to edge i and returns the
// status, x-weir-error and body.
func (e *secEnv) post(i int, key, body string) (int, string, []byte) {
	req, _ := http.NewRequest(http.MethodPost, e.s.edgeU[i]+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, err.Error(), nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Weir-Error"), b
}

// errorCode is the error.code (or error.type) of an OpenAI-format error.
func errorCode(body []byte) string {
	var v struct {
		Error struct {
			Code string `json:"code"`
			Type string `json:"type"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &v)
	if v.Error.Code != "" {
		return v.Error.Code
	}
	return v.Error.Type
}

// ---- 6. R-SEC-2: a record aimed at the edge's admin port ----

func (e *secEnv) testAdminPortRSEC2(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Profiling is off on both edges' admin ports (no --pprof).
	for i, a := range e.edgeAdmin {
		for _, p := range []string{"/debug/pprof/", "/debug/pprof/cmdline"} {
			resp, err := e.client.Get("http://" + a + p)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			t.Logf("edge-%d admin %s%s → %d", i+1, a, p, resp.StatusCode)
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("edge-%d %s = %d without --pprof, want 404", i+1, p, resp.StatusCode)
			}
		}
	}
	// The metric names a leak would show.
	resp, err := e.client.Get("http://" + e.edgeAdmin[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	names := slices.Compact(slices.Sorted(func(yield func(string) bool) {
		for _, m := range regexp.MustCompile(`(?m)^# TYPE (weir_[a-z0-9_]+)`).FindAllSubmatch(metrics, -1) {
			if !yield(string(m[1])) {
				return
			}
		}
	}))
	if len(names) == 0 {
		t.Fatalf("edge-2's /metrics shows no weir_ metric: %.300s", metrics)
	}

	// A tenant admin of sec, holding no cluster role.
	tok := e.tenantAdminToken(t, ctx)
	weirAs := func(args ...string) (string, error) {
		env := append(slices.Clone(e.s.env), "WEIR_URL="+e.s.cpURL, "WEIR_TOKEN="+tok)
		return runWith(ctx, env, bins.weir, append(args, "--tenant", e.s.tenant)...)
	}
	create := func(record, baseURL, model string) (string, error) {
		return weirAs("provider", "create", record, "--preset", "openai", "--base-url", baseURL, "--models", model,
			"--key-secret", "sys-provider-key", "--price", model+"=0.1,0.1,0.1")
	}
	// Base URLs that could only reach the metrics path itself: refused by
	// the configuration check.
	for _, c := range []struct{ record, url, why string }{
		{"adm-query", "http://" + e.edgeAdmin[1] + "/metrics?x=", "a query string"},
		{"adm-fragment", "http://" + e.edgeAdmin[1] + "/metrics#", "a fragment"},
		{"adm-userinfo", "http://u:p@" + e.edgeAdmin[1] + "/metrics", "user info"},
	} {
		out, err := create(c.record, c.url, probeModel)
		if err == nil {
			t.Errorf("the control plane took a record on %s (%s): %s", c.url, c.why, out)
			continue
		}
		t.Logf("base_url %-40s (%s) refused by the control plane: %s", c.url, c.why, oneLine(err.Error()))
	}

	// through calls model with the tenant's key on edge i once it is
	// served there, and returns the answer and the metric names it shows.
	s := e.s
	through := func(i int, model string) (callResult, []string) {
		t.Helper()
		s.waitUp(ctx, s.edges[i], "edge", func() error { return e.modelListed(i, s.key, model) })
		r := chat(ctx, e.client, s.edgeU[i], s.key, model, false, 0, nil)
		leaked := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return !bytes.Contains(r.body, []byte(n)) })
		if bytes.Contains(r.body, []byte("# HELP")) || bytes.Contains(r.body, []byte("# TYPE")) {
			leaked = append(leaked, "# HELP/# TYPE")
		}
		return r, leaked
	}
	refusedAtDial := func(what string, r callResult, leaked []string) {
		t.Helper()
		t.Logf("%s → %d %s, reasons %v, metric names in the answer: %d", what, r.status, errorCode(r.body), attemptReasons(r.body), len(leaked))
		if r.status != http.StatusBadGateway || !bytes.Contains(r.body, []byte(`"reason":"destination_refused"`)) ||
			bytes.Contains(r.body, []byte(`"status":404`)) {
			t.Errorf("%s: %d %.400s, want 502 with the member refused at dial time (destination_refused)", what, r.status, r.body)
		}
		if len(leaked) > 0 {
			t.Errorf("%s: the answer shows the edge's metrics: %v", what, leaked)
		}
	}

	// A clean path on a loopback port the operator did not open to tenant
	// records (edge-1's admin listener): the configuration check leaves
	// loopback ports to the dial-time guard (rules.AddrRefusal), which
	// refuses it on both edges — edge-1's own listener, and a closed port
	// to edge-2.
	closed := "http://" + e.edgeAdmin[0] + "/metrics"
	if out, err := create("adm-closed", closed, probeModel+"-closed"); err != nil {
		t.Logf("base_url %s (a loopback port not open to tenants) refused by the control plane: %s", closed, oneLine(err.Error()))
	} else {
		t.Logf("base_url %s (edge-1's admin port, not open to tenants) taken by the control plane: %s", closed, oneLine(out))
		for i := range s.edges {
			r, leaked := through(i, probeModel+"-closed")
			refusedAtDial(fmt.Sprintf("a call through %s on edge-%d", closed, i+1), r, leaked)
		}
	}

	// A clean path on a port the operator opened to tenant records, which
	// is edge-2's own admin listener: the control plane takes it, and
	// edge-2 refuses to dial itself.
	clean := "http://" + e.edgeAdmin[1] + "/metrics"
	if out, err := create("adm-clean", clean, probeModel); err != nil {
		t.Fatalf("provider create on %s: %v %s", clean, err, out)
	}
	r, leaked := through(1, probeModel)
	refusedAtDial(fmt.Sprintf("a call through %s on edge-2 (its own admin port, open to tenants)", clean), r, leaked)
	// Edge-1 is another process: to it that port is one the operator
	// opened, not a listener of its own, and it dials it (the openai
	// preset's path, /metrics/chat/completions, is not the metrics page).
	// Logged; only a leak of metrics fails.
	r, leaked = through(0, probeModel)
	t.Logf("the same record on edge-1 (edge-2's admin port is not edge-1's own) → %d %s, attempts %v, metric names in the answer: %d",
		r.status, errorCode(r.body), attemptReasons(r.body), len(leaked))
	if len(leaked) > 0 {
		t.Errorf("edge-1's answer shows edge-2's metrics: %v", leaked)
	}
	for _, rec := range []string{"adm-clean", "adm-closed"} {
		_, _ = weirAs("provider", "delete", rec)
	}
}

// attemptReasons are the status and reason of each attempt in a gateway
// error body's weir.attempts.
func attemptReasons(body []byte) []string {
	var v struct {
		Weir struct {
			Attempts []struct {
				Status int    `json:"status"`
				Reason string `json:"reason"`
			} `json:"attempts"`
		} `json:"weir"`
	}
	_ = json.Unmarshal(body, &v)
	var out []string
	for _, a := range v.Weir.Attempts {
		out = append(out, fmt.Sprintf("%d/%s", a.Status, a.Reason))
	}
	return out
}

// tenantAdminToken creates an admin holding only ROLE_TENANT_ADMIN on the
// system's tenant and returns a token of it.
func (e *secEnv) tenantAdminToken(t *testing.T, ctx context.Context) string {
	t.Helper()
	e.adminCall(t, ctx, "AdminService/CreateAdmin", map[string]any{
		"name": tenantAdmin, "roles": []map[string]string{{"role": "ROLE_TENANT_ADMIN", "tenant": e.s.tenant}},
	}, nil)
	var tok struct {
		Secret string `json:"secret"`
	}
	e.adminCall(t, ctx, "AdminService/CreateAdminToken", map[string]any{"admin": tenantAdmin, "description": "security systest"}, &tok)
	if tok.Secret == "" {
		t.Fatal("CreateAdminToken returned no secret")
	}
	return tok.Secret
}

// adminCall is one Connect JSON call of weir.admin.v1 with the cluster
// admin's token.
func (e *secEnv) adminCall(t *testing.T, ctx context.Context, method string, in, out any) {
	t.Helper()
	b, _ := json.Marshal(in)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.s.cpURL+"/weir.admin.v1."+method, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.s.token)
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", method, resp.StatusCode, body)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
	}
}

// ---- slow streams (the tenant-flood test's tools) ----

func (e *secEnv) testSlowStreamsLatency(t *testing.T) {
	rep := e.measureUnderSlowStreams(t, 0, tenantCall{e.s.key, "slow"}, tenantCall{e.keyB, poolModel}, 50, 40)
	t.Logf("%s", rep)
	if rep.held != rep.streams {
		t.Errorf("%d of %d slow streams held", rep.held, rep.streams)
	}
	if len(rep.failed) > 0 {
		for _, r := range rep.failed[:min(len(rep.failed), 5)] {
			t.Errorf("tenant B's call failed: status %d, error %v, body %.200s", r.status, r.err, r.body)
		}
		t.Errorf("%d of tenant B's calls failed", len(rep.failed))
	}
}

// floodLimit is tenant sec's max_in_flight in the flood test: with two live
// edges each edge admits ceil(20/2) = 10 of its calls at once (R-HEAD-7).
const (
	floodLimit = 20
	floodShare = 10
	// floodCallers is how many callers of tenant sec hammer edge-1 at once:
	// each opens a slow stream and, refused, tries again 50 ms later.
	floodCallers = 300
)

// testTenantFloodRCAP2: tenant sec (max_in_flight 20 across the cluster)
// floods edge-1 with 300 callers that each keep a slow stream open and
// retry at once when refused. Edge-1 holds exactly its share (10) of
// tenant sec's streams and refuses the rest 429 weir_tenant_limit with
// Retry-After, x-should-retry and x-weir-attempts 0 (R-CAP-2), records
// them as refused calls and counts them (R-CAP-3); the upstream never sees
// them; tenant B's calls on the same edge all succeed, and their p50 is
// logged with and without the flood.
func (e *secEnv) testTenantFloodRCAP2(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	e.s.mustWeir(ctx, nil, "tenant", "limits", "set", "--max-in-flight", strconv.Itoa(floodLimit))
	defer e.s.mustWeir(context.Background(), nil, "tenant", "limits", "set", "--max-in-flight", "0")
	// Both edges take the new snapshot: a stream over the share is refused.
	probe := func(i int) error {
		h := holdSlowStreams(e.s.edgeU[i], tenantCall{e.s.key, "slow"}, floodLimit+1)
		defer h.stop()
		return waitFor(ctx, 20*time.Second, 20*time.Millisecond, func() error {
			if h.failed.Load() == 0 {
				return errors.New("no stream refused yet")
			}
			return nil
		})
	}
	for i := range e.s.edges {
		if err := waitFor(ctx, 60*time.Second, 200*time.Millisecond, func() error { return probe(i) }); err != nil {
			t.Fatalf("edge-%d never applied max_in_flight %d: %v", i+1, floodLimit, err)
		}
	}
	waitStreamsGone := func() {
		if err := waitFor(ctx, 30*time.Second, 20*time.Millisecond, func() error {
			if o := e.up.open.Load(); o > 0 {
				return fmt.Errorf("the upstream still holds %d streams", o)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	waitStreamsGone()
	limited := e.callerLimited(t, 0, "tenant_max_in_flight")

	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	b := tenantCall{e.keyB, poolModel}
	baseline, failed := sampleLatency(ctx, c, e.s.edgeU[0], b, 40)
	rssIdle := mustMem(t, e.s.edges[0].pid()).rss

	f := startFlood(e.s.edgeU[0], tenantCall{e.s.key, "slow"}, floodCallers)
	err := waitFor(ctx, 60*time.Second, 20*time.Millisecond, func() error {
		if held, refused := f.held.Load(), f.refused.Load(); held < floodShare || refused < floodCallers {
			return fmt.Errorf("%d streams held, %d refusals", held, refused)
		}
		return nil
	})
	if err != nil {
		f.stop()
		t.Fatalf("flood: %v (first unexpected answer: %v)", err, f.firstErr())
	}
	during, failedDuring := sampleLatency(ctx, c, e.s.edgeU[0], b, 40)
	heldMax, upMax := f.held.Load(), e.up.open.Load()
	rssFlood := mustMem(t, e.s.edges[0].pid()).rss
	f.stop()
	waitStreamsGone()

	t.Logf("tenant flood on edge-1 (%d callers, max_in_flight %d across 2 edges): held %d streams (upstream held %d), %d refusals 429 weir_tenant_limit, %d other answers; VmRSS %d → %d MB",
		floodCallers, floodLimit, heldMax, upMax, f.refused.Load(), f.other.Load(), rssIdle>>20, rssFlood>>20)
	t.Logf("tenant B on edge-1: p50 %v p90 %v without the flood, p50 %v p90 %v during it (%d + %d calls)",
		percentile(baseline, 50).Round(100*time.Microsecond), percentile(baseline, 90).Round(100*time.Microsecond),
		percentile(during, 50).Round(100*time.Microsecond), percentile(during, 90).Round(100*time.Microsecond), len(baseline), len(during))
	if f.maxHeld.Load() != floodShare || upMax > floodShare {
		t.Errorf("edge-1 held up to %d of tenant sec's streams (upstream %d), want exactly its share %d (R-HEAD-7)", f.maxHeld.Load(), upMax, floodShare)
	}
	if n := f.other.Load(); n > 0 {
		t.Errorf("%d flood calls got an answer other than 200 or 429 weir_tenant_limit: %v", n, f.firstErr())
	}
	for _, r := range append(failed, failedDuring...) {
		t.Errorf("tenant B's call failed: status %d, error %v, body %.200s", r.status, r.err, r.body)
	}
	// Tenant B stays fast: generous against a loaded 2-core machine, far
	// below what waiting behind the flood's streams (a second a chunk) costs.
	if p50 := percentile(during, 50); p50 > max(10*percentile(baseline, 50), 250*time.Millisecond) {
		t.Errorf("tenant B's p50 during the flood is %v (without: %v)", p50, percentile(baseline, 50))
	}
	// R-CAP-3: counted at the edge and recorded as refused calls.
	if got := e.callerLimited(t, 0, "tenant_max_in_flight") - limited; got < floodCallers {
		t.Errorf("weir_caller_limited_total{limit=tenant_max_in_flight} grew by %v on edge-1, want at least %d", got, floodCallers)
	}
	err = waitFor(ctx, 60*time.Second, 200*time.Millisecond, func() error {
		var n, attempts int64
		err := e.s.query(ctx, func(c *pgx.Conn) error {
			return c.QueryRow(ctx, `SELECT count(*), (SELECT count(*) FROM call_attempts a JOIN calls c2 ON c2.call_id = a.call_id
				 WHERE c2.tenant_id = $1 AND c2.error_code = 'weir_tenant_limit')
				FROM calls WHERE tenant_id = $1 AND error_code = 'weir_tenant_limit' AND outcome = 'refused' AND status = 429`, e.tenantID).Scan(&n, &attempts)
		})
		if err != nil {
			return err
		}
		if attempts != 0 {
			return fmt.Errorf("refused calls have %d attempts", attempts)
		}
		if n < floodCallers {
			return fmt.Errorf("%d refused calls recorded, want at least %d", n, floodCallers)
		}
		return nil
	})
	if err != nil {
		t.Errorf("R-CAP-3: %v", err)
	}
}

// callerLimited reads weir_caller_limited_total{tenant=<the system's
// tenant>,limit=limit} from edge i's metrics (0 before the first refusal).
func (e *secEnv) callerLimited(t *testing.T, i int, limit string) float64 {
	t.Helper()
	resp, err := e.client.Get("http://" + e.edgeAdmin[i] + "/metrics")
	if err != nil {
		t.Fatalf("edge-%d metrics: %v", i+1, err)
	}
	defer resp.Body.Close()
	want := fmt.Sprintf(`weir_caller_limited_total{limit=%q,tenant=%q} `, limit, e.s.tenant)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), want); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", sc.Text(), err)
			}
			return f
		}
	}
	return 0
}

// flood is floodCallers callers of one tenant, each holding a slow stream
// open or, refused, asking again 50 ms later, until stop.
type flood struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	held    atomic.Int64 // streams answered 200 and open now
	maxHeld atomic.Int64 // the most held at once
	refused atomic.Int64 // 429 weir_tenant_limit answers with R-CAP-2's headers
	other   atomic.Int64 // anything else (counted once per caller)

	mu    sync.Mutex
	first error
}

func startFlood(base string, tc tenantCall, n int) *flood {
	ctx, cancel := context.WithCancel(context.Background())
	f := &flood{cancel: cancel}
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"flood"}],"max_tokens":1000,"stream":true}`, tc.model)
	for range n {
		f.wg.Go(func() {
			for ctx.Err() == nil {
				if err := f.call(ctx, c, base, tc.key, body); err != nil && ctx.Err() == nil {
					f.other.Add(1)
					f.note(err)
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
			}
		})
	}
	return f
}

// call makes one streaming call: held until ctx ends when answered, or
// checked as R-CAP-2's refusal.
func (f *flood) call(ctx context.Context, c *http.Client, base, key, body string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		n := f.held.Add(1)
		for m := f.maxHeld.Load(); n > m && !f.maxHeld.CompareAndSwap(m, n); m = f.maxHeld.Load() {
		}
		defer f.held.Add(-1)
		_, _ = io.Copy(io.Discard, resp.Body)
		if ctx.Err() == nil {
			return errors.New("a held stream ended before the flood did")
		}
		return nil
	case http.StatusTooManyRequests:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.Header.Get("X-Weir-Error") != "weir_tenant_limit" || ra < 1 ||
			resp.Header.Get("X-Should-Retry") != "true" || resp.Header.Get("X-Weir-Attempts") != "0" ||
			!bytes.Contains(b, []byte(`"weir_tenant_limit"`)) {
			return fmt.Errorf("429 without R-CAP-2's shape: headers %v, body %.300s", resp.Header, b)
		}
		f.refused.Add(1)
		return nil
	default:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("status %d: %.300s", resp.StatusCode, b)
	}
}

func (f *flood) note(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.first == nil {
		f.first = err
	}
}

func (f *flood) firstErr() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.first
}

func (f *flood) stop() {
	f.cancel()
	f.wg.Wait()
}

// tenantCall is whose calls, of which model.
type tenantCall struct{ key, model string }

// floodReport is what measureUnderSlowStreams measured.
type floodReport struct {
	edge     int
	streams  int             // slow streams asked for
	held     int             // streams open (edge answering, upstream holding) while B was timed
	heldIn   time.Duration   // from the first stream asked to all held
	chunks   int64           // stream chunks tenant A received in all
	baseline []time.Duration // tenant B's calls before the streams
	during   []time.Duration // tenant B's calls while the streams were held
	failed   []callResult    // tenant B's calls that did not succeed
	rssHeld  int64           // the edge's VmRSS with the streams held
	rssIdle  int64           // and before them
}

func (r floodReport) String() string {
	p := func(ds []time.Duration, q int) time.Duration { return percentile(ds, q).Round(100 * time.Microsecond) }
	return fmt.Sprintf("edge-%d, tenant A holding %d/%d slow streams (held after %v, %d chunks received; VmRSS %d → %d MB): tenant B p50 %v p90 %v max %v over %d calls (before the streams: p50 %v p90 %v over %d); %d of B's calls failed",
		r.edge+1, r.held, r.streams, r.heldIn.Round(time.Millisecond), r.chunks, r.rssIdle>>20, r.rssHeld>>20,
		p(r.during, 50), p(r.during, 90), p(r.during, 100), len(r.during), p(r.baseline, 50), p(r.baseline, 90), len(r.baseline), len(r.failed))
}

// measureUnderSlowStreams times samples calls of tenant B (b) on edge i,
// once alone and once while tenant A (a) holds n slow streams there:
// streaming calls that the upstream answers a chunk every second
// (secUpstream, a's model must be on it) and that stay open until the
// measurement ends. Tenant B's calls are made one after another.
func (e *secEnv) measureUnderSlowStreams(t *testing.T, i int, a, b tenantCall, n, samples int) floodReport {
	t.Helper()
	rep := floodReport{edge: i, streams: n}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	rep.baseline, rep.failed = sampleLatency(ctx, c, e.s.edgeU[i], b, samples)
	rep.rssIdle = mustMem(t, e.s.edges[i].pid()).rss

	openBefore := e.up.open.Load()
	start := time.Now()
	h := holdSlowStreams(e.s.edgeU[i], a, n)
	defer func() {
		h.stop()
		// The edge lets the upstream go when the callers do.
		if err := waitFor(context.Background(), 30*time.Second, 20*time.Millisecond, func() error {
			if o := e.up.open.Load(); o > openBefore {
				return fmt.Errorf("the upstream still holds %d streams", o-openBefore)
			}
			return nil
		}); err != nil {
			t.Error(err)
		}
	}()
	err := waitFor(ctx, 90*time.Second, 20*time.Millisecond, func() error {
		if f := h.failed.Load(); f > 0 {
			return fmt.Errorf("%d slow streams failed: %s", f, h.firstErr())
		}
		if got, up := h.open.Load(), e.up.open.Load()-openBefore; got < int64(n) || up < int64(n) {
			return fmt.Errorf("%d of %d streams answered, %d held by the upstream", got, n, up)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("slow streams: %v", err)
	}
	rep.heldIn = time.Since(start)
	rep.rssHeld = mustMem(t, e.s.edges[i].pid()).rss
	during, failed := sampleLatency(ctx, c, e.s.edgeU[i], b, samples)
	rep.during, rep.failed = during, append(rep.failed, failed...)
	rep.held = int(min(h.open.Load(), e.up.open.Load()-openBefore))
	rep.chunks = h.chunks.Load()
	return rep
}

// sampleLatency makes n calls of tc to the edge at base one after another
// and returns the durations of those that succeeded and the others.
func sampleLatency(ctx context.Context, c *http.Client, base string, tc tenantCall, n int) ([]time.Duration, []callResult) {
	var ds []time.Duration
	var failed []callResult
	for seq := range n {
		r := chat(ctx, c, base, tc.key, tc.model, false, seq, nil)
		if !r.success {
			failed = append(failed, r)
			continue
		}
		ds = append(ds, r.end.Sub(r.start))
	}
	return ds, failed
}

// slowStreams are streaming calls held open through an edge until stop.
type slowStreams struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	open   atomic.Int64 // answered 200 and not ended
	chunks atomic.Int64 // data lines received
	failed atomic.Int64

	mu    sync.Mutex
	first error
}

// holdSlowStreams starts n streaming calls of tc to the edge at base, each
// on a connection of its own.
func holdSlowStreams(base string, tc tenantCall, n int) *slowStreams {
	ctx, cancel := context.WithCancel(context.Background())
	h := &slowStreams{cancel: cancel}
	tr := &http.Transport{MaxIdleConnsPerHost: n, DisableKeepAlives: true}
	c := &http.Client{Transport: tr}
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hold"}],"max_tokens":1000,"stream":true}`, tc.model)
	for range n {
		h.wg.Go(func() {
			err := h.stream(ctx, c, base, tc.key, body)
			if err != nil && ctx.Err() == nil {
				h.failed.Add(1)
				h.mu.Lock()
				if h.first == nil {
					h.first = err
				}
				h.mu.Unlock()
			}
		})
	}
	return h
}

func (h *slowStreams) stream(ctx context.Context, c *http.Client, base, key, body string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	h.open.Add(1)
	defer h.open.Add(-1)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if bytes.HasPrefix(sc.Bytes(), []byte("data: {")) {
			h.chunks.Add(1)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return errors.New("the stream ended before it was let go")
}

func (h *slowStreams) firstErr() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.first
}

// stop ends every stream and waits for them.
func (h *slowStreams) stop() {
	h.cancel()
	h.wg.Wait()
}

// ---- the fake upstream ----

// secUpstream is an OpenAI-format provider in this process. It counts the
// calls it receives per model; streaming calls get a chunk every `every`
// until the caller goes away (or after 10 minutes).
type secUpstream struct {
	every   time.Duration
	open    atomic.Int64 // streams being answered
	keySeen atomic.Int64 // requests that carried providerKey

	mu     sync.Mutex
	counts map[string]int
}

func startSecUpstream(t *testing.T, addr string, every time.Duration) *secUpstream {
	t.Helper()
	u := &secUpstream{every: every, counts: map[string]int{}}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("fake upstream on %s: %v", addr, err)
	}
	srv := &http.Server{Handler: u, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return u
}

func (u *secUpstream) count(model string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.counts[model]
}

func (u *secUpstream) total() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, c := range u.counts {
		n += c
	}
	return n
}

func (u *secUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	_ = json.Unmarshal(b, &in)
	u.mu.Lock()
	u.counts[in.Model]++
	u.mu.Unlock()
	if strings.Contains(r.Header.Get("Authorization"), providerKey) {
		u.keySeen.Add(1)
	}
	if r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	if in.Model == "leaky" {
		// A provider that echoes what it was sent (R-SEC-6).
		auth := r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Upstream-Echo", auth)
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error","code":"invalid_api_key"}}`,
			strings.TrimPrefix(auth, "Bearer "))
		return
	}
	id := "chatcmpl-sec" + strconv.FormatInt(time.Now().UnixNano(), 36)
	usage := `{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}`
	if !in.Stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%q,"object":"chat.completion","created":%d,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":%s}`,
			id, time.Now().Unix(), in.Model, usage)
		return
	}
	u.open.Add(1)
	defer u.open.Add(-1)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	chunk := func(delta, finish string) error {
		fin := "null"
		if finish != "" {
			fin = strconv.Quote(finish)
		}
		if _, err := fmt.Fprintf(w, "data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"created\":%d,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n",
			id, time.Now().Unix(), in.Model, delta, fin); err != nil {
			return err
		}
		return rc.Flush()
	}
	if chunk(`{"role":"assistant","content":""}`, "") != nil {
		return
	}
	tick := time.NewTicker(u.every)
	defer tick.Stop()
	for range int(10 * time.Minute / u.every) {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
		if chunk(`{"content":"x"}`, "") != nil {
			return
		}
	}
	_ = chunk(`{}`, "stop")
	fmt.Fprintf(w, "data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"created\":%d,\"model\":%q,\"choices\":[],\"usage\":%s}\n\ndata: [DONE]\n\n", id, time.Now().Unix(), in.Model, usage)
}

// ---- raw HTTP, memory, processes ----

// exchange is one raw HTTP/1.1 request as an attacker sends it.
type exchange struct {
	resp   *http.Response // nil when the connection ended without one
	body   []byte         // up to 4 KiB of the answer's body
	sent   int64          // body bytes the server took before it answered or cut the connection
	took   time.Duration  // from the head written to the answer (or the end)
	closed bool           // the connection ended without an answer
	err    error
}

// rawExchange writes head at once and then body from a goroutine of its
// own (which stops at the first write error), and reads the answer for up
// to wait.
func rawExchange(addr, head string, body func(io.Writer) error, wait time.Duration) exchange {
	var x exchange
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		x.err = err
		return x
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, head); err != nil {
		x.err = err
		return x
	}
	cw := &countingWriter{w: conn}
	wrote := make(chan struct{})
	go func() { defer close(wrote); _ = body(cw) }()
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	x.took = time.Since(start)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			x.err = fmt.Errorf("no answer and no end of the connection within %v", wait)
		} else {
			x.closed = true
			x.err = fmt.Errorf("the connection ended without an answer: %w", err)
		}
	} else {
		x.resp = resp
		x.body, _ = io.ReadAll(io.LimitReader(resp.Body, 4096))
	}
	x.sent = cw.n.Load()
	_ = conn.Close()
	<-wrote
	return x
}

type countingWriter struct {
	w io.Writer
	n atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// zeroBody writes n zero bytes in 64 KiB writes.
func zeroBody(n int64) func(io.Writer) error {
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

// chunkedBody writes n bytes of JSON-ish text as 64 KiB HTTP chunks.
func chunkedBody(n int64) func(io.Writer) error {
	return func(w io.Writer) error {
		buf := bytes.Repeat([]byte("a"), 64<<10)
		if _, err := io.WriteString(w, "6\r\n{\"a\":\"\r\n"); err != nil {
			return err
		}
		for n > 0 {
			k := min(n, int64(len(buf)))
			if _, err := fmt.Fprintf(w, "%x\r\n%s\r\n", k, buf[:k]); err != nil {
				return err
			}
			n -= k
		}
		_, err := io.WriteString(w, "2\r\n\"}\r\n0\r\n\r\n")
		return err
	}
}

// mem is a process's resident memory, bytes.
type mem struct{ rss, hwm int64 }

// readMem reads VmRSS and VmHWM from /proc/<pid>/status.
func readMem(pid int) (mem, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return mem{}, err
	}
	var m mem
	for line := range strings.SplitSeq(string(b), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok || name != "VmRSS" && name != "VmHWM" {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return mem{}, fmt.Errorf("/proc/%d/status %s: %w", pid, line, err)
		}
		if name == "VmRSS" {
			m.rss = kb << 10
		} else {
			m.hwm = kb << 10
		}
	}
	if m.rss == 0 {
		return mem{}, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
	}
	return m, nil
}

func mustMem(t *testing.T, pid int) mem {
	t.Helper()
	m, err := readMem(pid)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// rssWatch samples a process's VmRSS every 10 ms until end.
type rssWatch struct {
	stop chan struct{}
	done chan struct{}
	peak atomic.Int64
}

func watchRSS(pid int) *rssWatch {
	w := &rssWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if m, err := readMem(pid); err == nil && m.rss > w.peak.Load() {
				w.peak.Store(m.rss)
			}
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// end stops the sampling and returns the peak VmRSS seen.
func (w *rssWatch) end() int64 {
	close(w.stop)
	<-w.done
	return w.peak.Load()
}

// pid is the process id of the current run (0 when not started).
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// runWith runs a binary to completion with env; the error carries its
// stderr.
func runWith(ctx context.Context, env []string, bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%w: %s", err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// envValue is the value of name in env (KEY=VALUE lines).
func envValue(env []string, name string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// flagValue is the value following flag in args.
func flagValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// replaceFlag returns args with the value following flag set to value.
func replaceFlag(args []string, flag, value string) []string {
	out := slices.Clone(args)
	if i := slices.Index(out, flag); i >= 0 && i+1 < len(out) {
		out[i+1] = value
		return out
	}
	return append(out, flag, value)
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// oneLine is s on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
