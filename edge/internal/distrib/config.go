package distrib

import (
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"weir.dev/routing/rules"

	"google.golang.org/protobuf/proto"

	"weir.dev/edge/internal/gateway"
	"weir.dev/edge/internal/secrets"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing"
	"weir.dev/routing/compile"
	"weir.dev/routing/natsnames"
)

// SecretSink takes the secret store built from the installed snapshots; the
// edge's upauth.Signer is one.
type SecretSink interface {
	SetStore(*secrets.Store)
}

// tenantState is one tenant as this edge serves it: the KV value's raw
// bytes (the signed envelope, which the disk cache keeps), its table, and
// its opened secrets.
type tenantState struct {
	version uint64
	raw     []byte
	snap    *configv1.TenantSnapshot
	table   *routing.Table
	secrets []secrets.Secret
}

// change is one KV entry: a key and its value, or its deletion.
type change struct {
	key     string
	raw     []byte
	deleted bool
}

// configState holds the snapshots an edge serves and installs them into the
// registry and the signer. Its methods are safe for concurrent use but are
// meant to be called from one watcher at a time.
type configState struct {
	reg   *gateway.Registry
	sink  SecretSink
	key   []byte
	pub   ed25519.PublicKey // verifies every value (DESIGN.md §4)
	cache *diskCache
	log   *slog.Logger
	// loopback, when set, takes the cluster snapshot's tenant loopback
	// ports each time one is installed.
	loopback func(rules.TenantLoopback)

	mu sync.Mutex
	// installed is set once a whole config is in the registry (from disk
	// or from the watch's initial delivery): the registry is then ready.
	installed      bool
	tenants        map[string]*tenantState
	cluster        *configv1.ClusterSnapshot
	clusterRaw     []byte
	clusterSecrets []secrets.Secret
}

func newConfigState(reg *gateway.Registry, sink SecretSink, edgeKey []byte, pub ed25519.PublicKey, cache *diskCache, log *slog.Logger) *configState {
	return &configState{reg: reg, sink: sink, key: edgeKey, pub: pub, cache: cache, log: log, tenants: map[string]*tenantState{}}
}

// loadDisk installs the snapshots the disk cache holds, so an edge that
// starts while NATS is down serves at once. A cached snapshot that no longer
// compiles (say, after an upgrade that tightened a rule) is logged and
// skipped, and so is one whose signature does not verify (the cache holds
// the signed envelopes as NATS delivered them). It returns the number of
// tenants installed.
func (s *configState) loadDisk() (int, error) {
	if s.cache == nil {
		return 0, nil
	}
	c, err := s.cache.load()
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.cluster != nil {
		payload, err := openSigned(s.pub, natsnames.ClusterKey, c.cluster)
		var cs *configv1.ClusterSnapshot
		var sec []secrets.Secret
		if err == nil {
			cs, sec, err = s.parseCluster(payload)
		}
		if err != nil {
			s.log.Error("config cache: cluster snapshot refused", "err", err)
		} else {
			s.cluster, s.clusterRaw, s.clusterSecrets = cs, c.cluster, sec
		}
	}
	for name, raw := range c.tenants {
		var snap *configv1.TenantSnapshot
		id, err := tenantOfFile(name)
		var payload []byte
		if err == nil {
			payload, err = openSigned(s.pub, natsnames.TenantKeyPrefix+id, raw)
		}
		if err == nil && len(payload) == 0 {
			err = fmt.Errorf("distrib: file %s holds a tombstone", name)
		}
		if err == nil {
			snap, err = decodeTenant(id, payload)
		}
		var ts *tenantState
		if err == nil {
			ts, err = s.buildTenant(snap, raw)
		}
		if err != nil {
			s.log.Error("config cache: tenant snapshot refused", "file", name, "err", err)
			continue
		}
		s.tenants[ts.snap.GetTenant().GetId()] = ts
	}
	if len(s.tenants) == 0 && s.cluster == nil {
		return 0, nil // no config: not ready until NATS delivers one
	}
	if err := s.installAll(); err != nil {
		return 0, err
	}
	if s.cluster != nil {
		s.installLoopback()
	}
	s.installed = true
	return len(s.tenants), nil
}

// apply installs a batch of KV changes: the whole bucket as a watch first
// delivers it (initial = true), or one update. The rules:
//   - every value must be a Signed envelope that verifies under the
//     control plane's public key for its key; one that does not is
//     refused (logged) and what was served stays. A KV deletion is not
//     signed and is ignored: a tenant ends with a signed tombstone (an
//     empty payload), which removes it;
//   - a snapshot whose version is not above the one served is ignored;
//   - a snapshot that does not parse, compile or open is refused and the
//     tenant keeps what it had (logged);
//   - a new cluster snapshot recompiles every tenant; a tenant that does
//     not compile with it keeps its table (logged);
//   - a tombstone removes the tenant;
//   - on the initial delivery of a bucket that holds anything, a tenant the
//     bucket no longer has (it was deleted while this edge was away) is
//     removed. An empty bucket removes nothing: it is being rebuilt, and the
//     cached config stays in force until it is;
//   - the first batch installed when nothing was installed before (no disk
//     cache) installs the whole config, even one without tenants or
//     without any key at all: the registry is then ready.
func (s *configState) apply(batch []change, initial bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.plan(batch, initial)
	if len(p.updated) == 0 && len(p.removed) == 0 && p.cluster == nil && s.installed {
		return
	}
	s.install(p)
}

// configPlan is what a batch of changes does to the config served: the
// decision of apply, apart from its effects.
type configPlan struct {
	// cluster, when set, is the new cluster snapshot (with its raw entry
	// and opened secrets) to serve.
	cluster        *configv1.ClusterSnapshot
	clusterRaw     []byte
	clusterSecrets []secrets.Secret
	// updated are the tenants to (re)install, removed those to drop.
	updated map[string]*tenantState
	removed []string
}

// plan decides what batch does (apply's rules) from the config served
// now, changing nothing but logging what it refuses. Caller holds mu.
func (s *configState) plan(batch []change, initial bool) configPlan {
	p := configPlan{updated: map[string]*tenantState{}}
	s.planCluster(batch, &p)
	cluster := s.cluster
	if p.cluster != nil {
		cluster = p.cluster
	}
	seen := map[string]bool{}
	for _, ch := range batch {
		id, ok := strings.CutPrefix(ch.key, natsnames.TenantKeyPrefix)
		if !ok {
			if ch.key != natsnames.ClusterKey {
				s.log.Debug("config bucket: unknown key ignored", "key", ch.key)
			}
			continue
		}
		seen[id] = true
		s.planTenant(id, ch, cluster, &p)
	}
	if initial && len(batch) > 0 {
		for id := range s.tenants {
			if !seen[id] {
				s.log.Info("tenant no longer in the config bucket; removed", "tenant_id", id)
				p.removed = append(p.removed, id)
			}
		}
	}
	if p.cluster != nil {
		for id, cur := range s.tenants {
			if p.updated[id] != nil {
				continue
			}
			t, err := compile.Compile(cur.snap, p.cluster)
			if err != nil {
				s.log.Error("tenant does not compile with the new cluster snapshot; keeping its table", "tenant_id", id, "err", err)
				continue
			}
			next := *cur
			next.table = t
			p.updated[id] = &next
		}
	}
	return p
}

// planCluster puts the batch's cluster snapshot into p when it verifies,
// parses and is newer than the one served.
func (s *configState) planCluster(batch []change, p *configPlan) {
	var ch *change
	for i := range batch {
		if batch[i].key == natsnames.ClusterKey {
			ch = &batch[i]
		}
	}
	switch {
	case ch == nil:
		return
	case ch.deleted:
		s.log.Warn("cluster snapshot deletion ignored: not signed", "key", natsnames.ClusterKey)
		return
	}
	payload, err := openSigned(s.pub, natsnames.ClusterKey, ch.raw)
	var cs *configv1.ClusterSnapshot
	var sec []secrets.Secret
	if err == nil {
		cs, sec, err = s.parseCluster(payload)
	}
	switch {
	case err != nil:
		s.log.Error("cluster snapshot refused; keeping the previous one", "err", err)
	case s.cluster != nil && cs.GetVersion() <= s.cluster.GetVersion():
		s.log.Debug("cluster snapshot ignored: version not above the one served", "version", cs.GetVersion())
	default:
		p.cluster, p.clusterRaw, p.clusterSecrets = cs, ch.raw, sec
	}
}

// planTenant records in p what the change ch of tenant id does, compiling
// with cluster: a newer snapshot that verifies, compiles and opens is
// updated, a signed tombstone removes the tenant, anything else keeps what
// is served.
func (s *configState) planTenant(id string, ch change, cluster *configv1.ClusterSnapshot, p *configPlan) {
	if ch.deleted {
		s.log.Warn("tenant snapshot deletion ignored: not signed; keeping the previous one", "tenant_id", id)
		return
	}
	payload, err := openSigned(s.pub, ch.key, ch.raw)
	if err != nil {
		s.log.Error("tenant snapshot refused; keeping the previous one", "tenant_id", id, "err", err)
		return
	}
	if len(payload) == 0 { // a signed tombstone: the tenant was deleted
		if _, ok := s.tenants[id]; ok {
			p.removed = append(p.removed, id)
		}
		delete(p.updated, id)
		return
	}
	snap, err := decodeTenant(id, payload)
	if err == nil {
		if cur := s.tenants[id]; cur != nil && snap.GetVersion() <= cur.version {
			delete(p.updated, id)
			return // already served (or older): a resync or a redelivery
		}
	}
	var ts *tenantState
	if err == nil {
		ts, err = s.buildTenantWith(snap, ch.raw, cluster)
	}
	if err != nil {
		s.log.Error("tenant snapshot refused; keeping the previous one", "tenant_id", id, "err", err)
		return
	}
	p.updated[id] = ts
}

// install serves p: the new tenant set and secret store (all or nothing:
// a store that cannot be built keeps the previous config), the registry's
// tables, the loopback ports of a new cluster snapshot, and the disk
// cache. Caller holds mu.
func (s *configState) install(p configPlan) {
	prev := s.tenants
	s.tenants = make(map[string]*tenantState, len(prev)+len(p.updated))
	for id, ts := range prev {
		s.tenants[id] = ts
	}
	for id, ts := range p.updated {
		s.tenants[id] = ts
	}
	for _, id := range p.removed {
		delete(s.tenants, id)
	}
	clusterSecrets := s.clusterSecrets
	if p.cluster != nil {
		clusterSecrets = p.clusterSecrets
	}
	store, err := buildStore(clusterSecrets, s.tenants)
	if err != nil {
		s.log.Error("config refused", "err", err)
		s.tenants = prev
		return
	}
	if p.cluster != nil {
		s.cluster, s.clusterRaw, s.clusterSecrets = p.cluster, p.clusterRaw, p.clusterSecrets
	}
	s.sink.SetStore(store)
	if p.cluster != nil {
		s.installLoopback()
	}
	if !s.installed || len(p.removed) > 0 || len(p.updated) > 1 {
		s.reg.Set(s.tables())
		s.installed = true
	} else {
		for _, ts := range p.updated {
			s.reg.Put(ts.table)
		}
	}
	s.cachePlan(p, prev)
	s.log.Info("config installed", "tenants", len(s.tenants), "changed", len(p.updated), "removed", len(p.removed), "cluster_changed", p.cluster != nil)
}

// cachePlan writes what install served to the disk cache: a new cluster
// snapshot, tenants whose version changed since prev, removals.
func (s *configState) cachePlan(p configPlan, prev map[string]*tenantState) {
	if s.cache == nil {
		return
	}
	if p.cluster != nil {
		s.cache.putCluster(p.clusterRaw)
	}
	for id, ts := range p.updated {
		if prev[id] == nil || prev[id].version != ts.version {
			s.cache.putTenant(id, ts.raw)
		}
	}
	for _, id := range p.removed {
		s.cache.removeTenant(id)
	}
}

// installLoopback passes the served cluster snapshot's tenant loopback
// ports on (none when it does not say; a bad port is logged and none
// allowed). Caller holds mu.
func (s *configState) installLoopback() {
	if s.loopback == nil {
		return
	}
	l, err := compile.TenantLoopback(s.cluster, rules.TenantLoopback{})
	if err != nil {
		s.log.Error("cluster snapshot: tenant loopback ports refused; tenant records may reach no loopback port", "err", err)
	}
	s.loopback(l)
}

// installAll puts every tenant's table and the whole secret store in place.
// Caller holds mu.
func (s *configState) installAll() error {
	store, err := buildStore(s.clusterSecrets, s.tenants)
	if err != nil {
		return err
	}
	s.sink.SetStore(store)
	s.reg.Set(s.tables())
	return nil
}

// tables lists every tenant's table. Caller holds mu.
func (s *configState) tables() []*routing.Table {
	out := make([]*routing.Table, 0, len(s.tenants))
	for _, ts := range s.tenants {
		out = append(out, ts.table)
	}
	return out
}

// tenantOfFile is the tenant id a cache file name (tenantFile) encodes.
func tenantOfFile(name string) (string, error) {
	h := strings.TrimSuffix(strings.TrimPrefix(name, tenantPrefix), fileSuffix)
	b, err := hex.DecodeString(h)
	if err != nil || len(b) == 0 {
		return "", fmt.Errorf("distrib: cache file %s names no tenant", name)
	}
	return string(b), nil
}

// parseCluster decodes a cluster snapshot (the payload of its envelope)
// and opens its secrets.
func (s *configState) parseCluster(raw []byte) (*configv1.ClusterSnapshot, []secrets.Secret, error) {
	cs := &configv1.ClusterSnapshot{}
	if err := proto.Unmarshal(raw, cs); err != nil {
		return nil, nil, fmt.Errorf("distrib: cluster snapshot does not decode: %w", err)
	}
	sec, err := openSecrets(s.key, "", cs.GetSecrets())
	if err != nil {
		return nil, nil, fmt.Errorf("distrib: cluster snapshot secrets: %w", err)
	}
	return cs, sec, nil
}

// decodeTenant decodes one tenant snapshot. wantID, when set, is the id its
// key names.
func decodeTenant(wantID string, raw []byte) (*configv1.TenantSnapshot, error) {
	snap := &configv1.TenantSnapshot{}
	if err := proto.Unmarshal(raw, snap); err != nil {
		return nil, fmt.Errorf("distrib: tenant snapshot does not decode: %w", err)
	}
	if id := snap.GetTenant().GetId(); wantID != "" && id != wantID {
		return nil, fmt.Errorf("distrib: key names tenant %q but the snapshot is of %q", wantID, id)
	}
	return snap, nil
}

// buildTenant compiles a decoded snapshot (with the cluster snapshot served
// now) and opens its secrets. Caller holds mu.
func (s *configState) buildTenant(snap *configv1.TenantSnapshot, raw []byte) (*tenantState, error) {
	return s.buildTenantWith(snap, raw, s.cluster)
}

// buildTenantWith compiles a decoded snapshot with the cluster snapshot
// cluster and opens its secrets; it changes nothing.
func (s *configState) buildTenantWith(snap *configv1.TenantSnapshot, raw []byte, cluster *configv1.ClusterSnapshot) (*tenantState, error) {
	t, err := compile.Compile(snap, cluster)
	if err != nil {
		return nil, fmt.Errorf("distrib: tenant snapshot version %d: %w", snap.GetVersion(), err)
	}
	sec, err := openSecrets(s.key, snap.GetTenant().GetId(), snap.GetSecrets())
	if err != nil {
		return nil, fmt.Errorf("distrib: tenant snapshot version %d secrets: %w", snap.GetVersion(), err)
	}
	return &tenantState{version: snap.GetVersion(), raw: raw, snap: snap, table: t, secrets: sec}, nil
}
