package snapshot

import (
	"bytes"
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"weir.dev/db/sqlc"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the built snapshots")

// build builds a case's snapshots with the test keys and nonce stream; nil
// for a half the case does not have.
func build(t testing.TB, c goldenCase) (*configv1.TenantSnapshot, *configv1.ClusterSnapshot) {
	t.Helper()
	var ts *configv1.TenantSnapshot
	var cs *configv1.ClusterSnapshot
	var err error
	if c.tenant != nil {
		if ts, err = BuildTenant(c.tenant(), testOpen, testEdgeKey(), testRand()); err != nil {
			t.Fatalf("BuildTenant: %v", err)
		}
	}
	if c.cluster != nil {
		if cs, err = BuildCluster(c.cluster(), testOpen, testEdgeKey(), testRand()); err != nil {
			t.Fatalf("BuildCluster: %v", err)
		}
	}
	return ts, cs
}

// goldenFiles pairs each half of a case with its golden file.
func goldenFiles(c goldenCase, ts *configv1.TenantSnapshot, cs *configv1.ClusterSnapshot) map[string]proto.Message {
	out := map[string]proto.Message{}
	if ts != nil {
		out[filepath.Join("testdata", c.name+".golden")] = ts
	}
	if cs != nil {
		out[filepath.Join("testdata", c.name+".cluster.golden")] = cs
	}
	return out
}

// TestGolden builds every case and compares the protojson of its snapshots
// with testdata/NAME.golden (tenant) and testdata/NAME.cluster.golden
// (cluster). Run with -update to rewrite them after a deliberate change, and
// review the diff.
func TestGolden(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			ts, cs := build(t, c)
			for path, m := range goldenFiles(c, ts, cs) {
				got := marshalGolden(t, m)
				if *update {
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test ./internal/snapshot -update to create it)", err)
				}
				if diff := cmp.Diff(string(want), string(got)); diff != "" {
					t.Errorf("%s differs (-golden +built); rerun with -update if the change is deliberate:\n%s", path, diff)
				}
				// The golden file is a faithful encoding: it reads back
				// into the same snapshot.
				back := m.ProtoReflect().New().Interface()
				if err := protojson.Unmarshal(want, back); err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				if !proto.Equal(back, m) {
					t.Errorf("%s does not read back into the built snapshot", path)
				}
			}
		})
	}
}

// TestGoldenFilesHoldEdgeInvariants reads every golden file back and
// compiles it with the edges' compiler (weir.dev/routing/compile): names,
// plain-or-pool, R-SEC-2 addresses, R-SEC-3 auth, whole prices (R-COST-4),
// model references, key hashes; plus the builder's own promises (weights
// and orders written out, sealed secrets) — see checkTenant.
func TestGoldenFilesHoldEdgeInvariants(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.golden")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for name, value := range secretValues() {
				if bytes.Contains(b, []byte(value)) {
					t.Errorf("the value of secret %q is in the file", name)
				}
			}
			var problems []string
			if strings.HasSuffix(path, ".cluster.golden") {
				cs := &configv1.ClusterSnapshot{}
				if err := protojson.Unmarshal(b, cs); err != nil {
					t.Fatal(err)
				}
				problems = checkCluster(cs, testEdgeKey())
			} else {
				ts := &configv1.TenantSnapshot{}
				if err := protojson.Unmarshal(b, ts); err != nil {
					t.Fatal(err)
				}
				problems = checkTenant(ts, testEdgeKey())
			}
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}

// TestBuildIgnoresRowOrder builds every case from its rows shuffled many
// ways and expects the same bytes: the output order is the builder's own.
func TestBuildIgnoresRowOrder(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			wantTS, wantCS := build(t, c)
			rng := rand.New(rand.NewPCG(1, 2))
			for range 20 {
				sc := c
				if c.tenant != nil {
					sc.tenant = func() TenantRows {
						in := c.tenant()
						shuffleAll(rng, &in.APIKeys, &in.Records, &in.Models, &in.Members, &in.RecordPrices, &in.MemberPrices, &in.Budgets, &in.Secrets)
						return in
					}
				}
				if c.cluster != nil {
					sc.cluster = func() ClusterRows {
						in := c.cluster()
						shuffleAll(rng, &in.Records, &in.Models, &in.Members, &in.RecordPrices, &in.MemberPrices, &in.Shares, &in.Secrets)
						return in
					}
				}
				gotTS, gotCS := build(t, sc)
				if !proto.Equal(gotTS, wantTS) || !proto.Equal(gotCS, wantCS) {
					t.Fatalf("shuffled rows built another snapshot:\n%s", cmp.Diff(marshalGolden(t, wantTS), marshalGolden(t, gotTS)))
				}
			}
		})
	}
}

// shuffleAll shuffles each pointed-to slice in place.
func shuffleAll(rng *rand.Rand, slices ...any) {
	for _, s := range slices {
		v := reflect.ValueOf(s).Elem()
		rng.Shuffle(v.Len(), reflect.Swapper(v.Interface()))
	}
}

// TestSecretsResealed opens every secret of every case with the edge key,
// as an edge does, and finds the value the master-key row held; a secret no
// record names is not sent.
func TestSecretsResealed(t *testing.T) {
	values := secretValues()
	sent := map[string]bool{}
	for _, c := range goldenCases() {
		ts, cs := build(t, c)
		secrets := append(ts.GetSecrets(), cs.GetSecrets()...)
		for _, s := range secrets {
			plain, err := edgeOpen(testEdgeKey(), s.GetCiphertext())
			if err != nil {
				t.Errorf("%s: secret %q does not open with the edge key: %v", c.name, s.GetName(), err)
				continue
			}
			if string(plain) != values[s.GetName()] {
				t.Errorf("%s: secret %q opens to another value", c.name, s.GetName())
			}
			sent[s.GetName()] = true
		}
		if ts != nil {
			for _, s := range ts.GetSecrets() {
				if s.GetTenantId() != ts.GetTenant().GetId() {
					t.Errorf("%s: secret %q has tenant_id %q", c.name, s.GetName(), s.GetTenantId())
				}
			}
		}
		for _, s := range cs.GetSecrets() {
			if s.GetTenantId() != "" {
				t.Errorf("%s: cluster secret %q has tenant_id %q", c.name, s.GetName(), s.GetTenantId())
			}
		}
	}
	for _, name := range []string{"unused", "unreferenced"} {
		if sent[name] {
			t.Errorf("secret %q is named by no record but was sent", name)
		}
	}
	// Nonces come from rand: two builds with different streams seal
	// differently, and both open.
	in := secretRows()
	a, err := BuildTenant(in, testOpen, testEdgeKey(), rand.NewChaCha8([32]byte{1}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := BuildTenant(in, testOpen, testEdgeKey(), rand.NewChaCha8([32]byte{2}))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.GetSecrets()[0].GetCiphertext()[:12], b.GetSecrets()[0].GetCiphertext()[:12]) {
		t.Error("two nonce streams gave the same nonce")
	}
}

// TestBuildDoesNotChangeItsInput builds from rows and compares them with a
// fresh copy afterwards (sorting works on copies; plaintexts are cleared,
// ciphertexts are not).
func TestBuildDoesNotChangeItsInput(t *testing.T) {
	for _, c := range goldenCases() {
		if c.tenant != nil {
			in := c.tenant()
			if _, err := BuildTenant(in, testOpen, testEdgeKey(), testRand()); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.tenant(), in); diff != "" {
				t.Errorf("%s: BuildTenant changed its input:\n%s", c.name, diff)
			}
		}
		if c.cluster != nil {
			in := c.cluster()
			if _, err := BuildCluster(in, testOpen, testEdgeKey(), testRand()); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.cluster(), in, protocmp.Transform()); diff != "" {
				t.Errorf("%s: BuildCluster changed its input:\n%s", c.name, diff)
			}
		}
	}
}

// TestBuildErrors checks that rows that cannot be mapped, rows of another
// owner and secrets that cannot be resealed are refused with every problem
// named, and that no error shows a secret value.
func TestBuildErrors(t *testing.T) {
	otherTenant := other()
	tests := []struct {
		name     string
		change   func(*TenantRows)
		edgeKey  []byte
		open     OpenFunc
		sentinel error
		want     []string // substrings of the error
	}{
		{
			name:     "record of another tenant",
			change:   func(in *TenantRows) { in.Records[0].TenantID = otherTenant.ID },
			sentinel: ErrInvalidRows,
			want:     []string{`record "azure-gpt": belongs to tenant 00000001-0000-0000-0000-000000000002`},
		},
		{
			name: "secret, key and budget of another tenant",
			change: func(in *TenantRows) {
				in.Secrets[0].TenantID = otherTenant.ID
				in.APIKeys[0].TenantID = otherTenant.ID
				in.Budgets = []sqlc.Budget{{Name: "b", TenantID: otherTenant.ID, Period: "day"}}
			},
			sentinel: ErrInvalidRows,
			want:     []string{`secret "azure-sweden": belongs to tenant`, `key "eu-app": belongs to tenant`, `budget "b": belongs to tenant`},
		},
		{
			name:     "member of a record not in the rows",
			change:   func(in *TenantRows) { in.Members[0].RecordID = id(kRecord, 99) },
			sentinel: ErrInvalidRows,
			want:     []string{`member "sweden": its record 00000002-0000-0000-0000-000000000063 is not among the records of tenant`},
		},
		{
			name:     "member in another scope",
			change:   func(in *TenantRows) { in.Members[1].Scope = otherTenant.ID },
			sentinel: ErrInvalidRows,
			want:     []string{`member "france": belongs to scope`},
		},
		{
			name: "unknown enum values and malformed JSON, all listed",
			change: func(in *TenantRows) {
				in.Records[0].WireFormat = "grpc"
				in.Records[0].AuthKind = "magic"
				in.Records[0].Tags = []byte(`{"a":1}`)
				in.Models[0].Kind = "image"
				in.Members[0].ModelMap = []byte(`[]`)
				in.Members[1].Weight = 0
			},
			sentinel: ErrInvalidRows,
			want: []string{
				`unknown wire_format "grpc"`, `unknown auth_kind "magic"`, `tags: not a JSON object of strings`,
				`unknown kind "image"`, `member "sweden": model_map`, `member "france": weight must be at least 1, got 0`,
			},
		},
		{
			name:     "no time",
			change:   func(in *TenantRows) { in.Now = time.Time{} },
			sentinel: ErrInvalidRows,
			want:     []string{"Now is not set"},
		},
		{
			name:     "edge key of the wrong size",
			edgeKey:  make([]byte, 16),
			sentinel: ErrSecret,
			want:     []string{"edge key must be 32 bytes, got 16"},
		},
		{
			name:     "master key refuses",
			open:     func(sqlc.Secret) ([]byte, error) { return nil, errors.New("cipher: message authentication failed") },
			sentinel: ErrSecret,
			want:     []string{`secret "azure-france": open under the master key`, `secret "azure-sweden": open under the master key`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := azurePoolRows()
			if tt.change != nil {
				tt.change(&in)
			}
			key, open := testEdgeKey(), OpenFunc(testOpen)
			if tt.edgeKey != nil {
				key = tt.edgeKey
			}
			if tt.open != nil {
				open = tt.open
			}
			ts, err := BuildTenant(in, open, key, testRand())
			if err == nil {
				t.Fatal("BuildTenant accepted the rows")
			}
			if ts != nil {
				t.Error("BuildTenant returned a snapshot with its error")
			}
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("error does not wrap %v: %v", tt.sentinel, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			for name, v := range secretValues() {
				if strings.Contains(err.Error(), v) {
					t.Errorf("error shows the value of secret %q", name)
				}
			}
		})
	}
}

// TestBuildClusterErrors checks the cluster's own ownership rules.
func TestBuildClusterErrors(t *testing.T) {
	in := managedClusterRows()
	in.Records[0].TenantID = acme().ID
	in.Shares = append(in.Shares, sqlc.ListRecordSharesRow{RecordID: id(kRecord, 77), TenantID: acme().ID, RecordName: "gone", TenantName: "acme"})
	in.Secrets[0].TenantID = acme().ID
	_, err := BuildCluster(in, testOpen, testEdgeKey(), testRand())
	if !errors.Is(err, ErrInvalidRows) {
		t.Fatalf("error does not wrap ErrInvalidRows: %v", err)
	}
	for _, w := range []string{
		`record "gpu-farm": belongs to tenant 00000001-0000-0000-0000-000000000001, not to the cluster`,
		`share of record "gone" with tenant "acme": the record is not among the managed records`,
		`secret "cluster-anthropic": belongs to tenant`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
}

// TestEmptyPoolLeftOut checks that a pool record without members is not
// sent (the edge would refuse the whole snapshot for it) while the owner's
// other records are.
func TestEmptyPoolLeftOut(t *testing.T) {
	in := plainOpenAIRows()
	in.Records = append(in.Records, newRecord(9, in.Tenant.ID, "empty-pool", "openai", ""))
	ts, err := BuildTenant(in, testOpen, testEdgeKey(), testRand())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range ts.GetRecords() {
		names = append(names, r.GetName())
	}
	if want := []string{"corp-gateway", "openai"}; !reflect.DeepEqual(names, want) {
		t.Errorf("records %v, want %v", names, want)
	}
}

// TestCurrentPeriod checks the budget period rule: UTC calendar days and
// months; a period that ended is rolled over with nothing spent.
func TestCurrentPeriod(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	day, month, total := configv1.BudgetPeriod_BUDGET_PERIOD_DAY, configv1.BudgetPeriod_BUDGET_PERIOD_MONTH, configv1.BudgetPeriod_BUDGET_PERIOD_TOTAL
	tests := []struct {
		name      string
		period    configv1.BudgetPeriod
		start     string
		now       string
		wantStart string
		wantSpent int64
	}{
		{"day current", day, "2025-06-15T00:00:00Z", "2025-06-15T23:59:59Z", "2025-06-15T00:00:00Z", 7},
		{"day started mid-day, current", day, "2025-06-15T08:30:00Z", "2025-06-15T12:00:00Z", "2025-06-15T08:30:00Z", 7},
		{"day ended", day, "2025-06-14T00:00:00Z", "2025-06-15T00:00:00Z", "2025-06-15T00:00:00Z", 0},
		{"day in another zone", day, "2025-06-15T01:00:00+02:00", "2025-06-15T12:00:00Z", "2025-06-15T00:00:00Z", 0},
		{"day starting after now", day, "2025-06-16T00:00:00Z", "2025-06-15T12:00:00Z", "2025-06-16T00:00:00Z", 7},
		{"month current", month, "2025-06-01T00:00:00Z", "2025-06-30T23:00:00Z", "2025-06-01T00:00:00Z", 7},
		{"month ended", month, "2025-05-01T00:00:00Z", "2025-06-15T12:00:00Z", "2025-06-01T00:00:00Z", 0},
		{"total never ends", total, "2020-01-01T00:00:00Z", "2025-06-15T12:00:00Z", "2020-01-01T00:00:00Z", 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start, spent := currentPeriod(tt.period, at(tt.start), 7, at(tt.now))
			if !start.Equal(at(tt.wantStart)) || spent != tt.wantSpent {
				t.Errorf("got %v, %d; want %v, %d", start, spent, at(tt.wantStart), tt.wantSpent)
			}
		})
	}
}

// TestInvariantCheckerCatches makes sure the restated edge rules do catch
// what they are for, so that a passing TestGoldenFilesHoldEdgeInvariants
// means something.
func TestInvariantCheckerCatches(t *testing.T) {
	tests := []struct {
		name   string
		change func(*configv1.TenantSnapshot)
	}{
		{"bad record name", func(ts *configv1.TenantSnapshot) { ts.Records[0].Name = "Azure GPT" }},
		{"plain http to a public host", func(ts *configv1.TenantSnapshot) {
			ts.Records[0].Members[0].BaseUrl = "http://acme-france.openai.azure.com/openai"
		}},
		{"private address", func(ts *configv1.TenantSnapshot) { ts.Records[0].Members[1].BaseUrl = "https://10.0.0.1/v1" }},
		{"price not whole", func(ts *configv1.TenantSnapshot) { ts.Records[0].Prices[1].CacheReadMicros = nil }},
		{"member price of a model it does not serve", func(ts *configv1.TenantSnapshot) {
			ts.Records[0].Members[0].Prices[0].Model = "gpt-x-mini"
		}},
		{"weight 0", func(ts *configv1.TenantSnapshot) { ts.Records[0].Members[0].Weight = 0 }},
		{"short hash", func(ts *configv1.TenantSnapshot) { ts.ApiKeys[0].Sha256 = ts.ApiKeys[0].Sha256[:8] }},
		{"secret not sealed for edges", func(ts *configv1.TenantSnapshot) { ts.Secrets[0].Ciphertext[20] ^= 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, _ := build(t, goldenCase{tenant: azurePoolRows})
			if p := checkTenant(ts, testEdgeKey()); len(p) != 0 {
				t.Fatalf("unchanged snapshot has problems: %v", p)
			}
			tt.change(ts)
			if p := checkTenant(ts, testEdgeKey()); len(p) == 0 {
				t.Error("the checker found nothing")
			}
		})
	}
}

// R-SEC-2: the cluster snapshot always says which loopback ports tenant
// records may dial: nothing given is an explicit "no port".
func TestClusterTenantLoopbackRSEC2(t *testing.T) {
	in := managedClusterRows()
	in.TenantLoopback = nil
	cs, err := BuildCluster(in, testOpen, testEdgeKey(), testRand())
	if err != nil {
		t.Fatal(err)
	}
	if tl := cs.GetTenantLoopback(); tl == nil || tl.GetAllPorts() || len(tl.GetPorts()) != 0 {
		t.Errorf("no setting: tenant_loopback = %v, want set and empty", tl)
	}
	in.TenantLoopback = &configv1.TenantLoopback{AllPorts: true}
	if cs, err = BuildCluster(in, testOpen, testEdgeKey(), testRand()); err != nil || !cs.GetTenantLoopback().GetAllPorts() {
		t.Errorf("every port (--dev): %v %v", cs.GetTenantLoopback(), err)
	}
}

// R-CAP-2: the cluster snapshot always carries the default tenant
// max_in_flight: the operator's, or 512 when none is given.
func TestClusterDefaultTenantMaxInFlightRCAP2(t *testing.T) {
	in := managedClusterRows()
	in.DefaultTenantMaxInFlight = 0
	cs, err := BuildCluster(in, testOpen, testEdgeKey(), testRand())
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.GetDefaultTenantMaxInFlight(); got != 512 {
		t.Errorf("no setting: default_tenant_max_in_flight = %d, want 512", got)
	}
	in.DefaultTenantMaxInFlight = 2000
	if cs, err = BuildCluster(in, testOpen, testEdgeKey(), testRand()); err != nil || cs.GetDefaultTenantMaxInFlight() != 2000 {
		t.Errorf("2000: %d %v", cs.GetDefaultTenantMaxInFlight(), err)
	}
}

// R-CAP-2: a tenant's and its keys' caller limits reach the snapshot as
// stored; none at all (both 0) sends no limits.
func TestTenantAndKeyLimitsRCAP2(t *testing.T) {
	in := keyRestrictionRows()
	in.Tenant.RPM, in.Tenant.MaxInFlight = 0, 40
	ts, err := BuildTenant(in, testOpen, testEdgeKey(), testRand())
	if err != nil {
		t.Fatal(err)
	}
	if l := ts.GetTenant().GetLimits(); l.GetRpm() != 0 || l.GetMaxInFlight() != 40 {
		t.Errorf("tenant limits = %v, want max_in_flight 40", l)
	}
	got := map[string]*configv1.CallerLimits{}
	for _, k := range ts.GetApiKeys() {
		got[k.GetName()] = k.GetLimits()
	}
	if l := got["batch"]; l.GetRpm() != 600 || l.GetMaxInFlight() != 8 {
		t.Errorf("batch limits = %v", l)
	}
	if l := got["ci"]; l != nil {
		t.Errorf("ci has no limits, yet the snapshot says %v", l)
	}
	in.Tenant.MaxInFlight = 0
	in.Tenant.RPM = 0
	if ts, err = BuildTenant(in, testOpen, testEdgeKey(), testRand()); err != nil || ts.GetTenant().GetLimits() != nil {
		t.Errorf("no tenant limits: %v %v", ts.GetTenant().GetLimits(), err)
	}
}
