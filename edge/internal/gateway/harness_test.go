package gateway_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"weir.dev/edge/internal/fakeprovider"
	"weir.dev/edge/internal/gateway"
	"weir.dev/edge/internal/netguard"
	"weir.dev/edge/internal/secrets"
	"weir.dev/edge/internal/upauth"
	"weir.dev/edge/internal/usage"
	"weir.dev/edge/internal/wire"
	"weir.dev/edge/internal/wire/anthropic"
	"weir.dev/edge/internal/wire/bedrock"
	"weir.dev/edge/internal/wire/gemini"
	"weir.dev/edge/internal/wire/openai"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing"
	"weir.dev/routing/compile"
)

const (
	callerKey   = "weir-test-key-0123456789"
	providerKey = "sk-provider-secret-value"
	awsID       = "AKIDEXAMPLE"
	awsSecret   = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
)

// fakeMember is one pool member served by its own fake provider, or by the
// server at url when fake is nil.
type fakeMember struct {
	name   string
	order  uint32
	weight uint32
	fake   *fakeprovider.Server
	url    string
	edit   func(*configv1.Member)
}

// harness is an edge gateway on loopback in front of fake providers.
type harness struct {
	t      *testing.T
	url    string
	sink   *usage.Memory
	fakes  map[string]*fakeprovider.Server
	states *routing.States
	gw     *gateway.Gateway
	table  *routing.Table
	reg    *gateway.Registry
}

type recordSpec struct {
	name    string
	wire    configv1.WireFormat
	models  []*configv1.Model
	members []fakeMember
	auth    *configv1.Auth
	edit    func(*configv1.ProviderRecord)
	// secretHost overrides the host the key secret is bound to.
	secretHost string
	noSecret   bool
	// keyValue, when set, is the key secret's value (a service account's
	// JSON key, say) instead of providerKey.
	keyValue []byte
}

func chatModel(n string) *configv1.Model {
	return &configv1.Model{Name: n, Kind: configv1.ModelKind_MODEL_KIND_CHAT}
}

func newFake(t *testing.T, opts fakeprovider.Options) *fakeprovider.Server {
	t.Helper()
	f := fakeprovider.New(opts)
	if _, err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// newHarness starts a gateway whose tenant has the given records.
func newHarness(t *testing.T, specs ...recordSpec) *harness {
	t.Helper()
	return newHarnessSink(t, nil, specs...)
}

// newHarnessSink is newHarness whose gateway writes records to wrap(h.sink)
// (h.sink itself when wrap is nil).
func newHarnessSink(t *testing.T, wrap func(*usage.Memory) usage.Sink, specs ...recordSpec) *harness {
	t.Helper()
	return newHarnessOpts(t, harnessOpts{sink: wrap}, specs...)
}

// harnessOpts changes what newHarness sets up.
type harnessOpts struct {
	// sink wraps h.sink as the gateway's sink.
	sink func(*usage.Memory) usage.Sink
	// adapters changes the gateway's adapters (e.g. to wrap one).
	adapters func(map[routing.WireFormat]wire.Adapter)
	// budgets replaces the gateway's budgets.
	budgets gateway.Budgets
	// log is the gateway's logger.
	log *slog.Logger
	// cfg changes the gateway's config last.
	cfg func(*gateway.Config)
	// tenant changes the tenant snapshot before it is compiled.
	tenant func(*configv1.TenantSnapshot)
	// cluster is the cluster snapshot the tenant is compiled with.
	cluster *configv1.ClusterSnapshot
}

// newHarnessOpts is newHarness set up by opts.
func newHarnessOpts(t *testing.T, opts harnessOpts, specs ...recordSpec) *harness {
	t.Helper()
	wrap := opts.sink
	h := &harness{t: t, sink: usage.NewMemory(), fakes: map[string]*fakeprovider.Server{}, states: routing.NewStates()}
	var sink usage.Sink = h.sink
	if wrap != nil {
		sink = wrap(h.sink)
	}
	sum := sha256.Sum256([]byte(callerKey))
	snap := &configv1.TenantSnapshot{
		Version: 1,
		Tenant:  &configv1.Tenant{Id: "tenant-1", Name: "acme"},
		ApiKeys: []*configv1.ApiKey{{Id: "key-1", Name: "ci", Sha256: sum[:]}},
	}
	var secretList []secrets.Secret
	for _, sp := range specs {
		auth := sp.auth
		if auth == nil {
			switch sp.wire {
			case configv1.WireFormat_WIRE_FORMAT_ANTHROPIC:
				auth = &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "x-api-key"}
			case configv1.WireFormat_WIRE_FORMAT_BEDROCK:
				auth = &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_SIGV4, AwsService: "bedrock", AwsRegion: "eu-north-1", AccessKeySecret: "aws"}
			default:
				auth = &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "authorization"}
			}
		}
		rec := &configv1.ProviderRecord{
			Id: "rec-" + sp.name, Name: sp.name, TenantId: "tenant-1", WireFormat: sp.wire, Models: sp.models,
			Auth: auth, KeySecret: "key", Recovery: &configv1.Recovery{AttemptDeadline: durationpb.New(5 * time.Second), CallDeadline: durationpb.New(20 * time.Second)},
		}
		for _, m := range sp.members {
			base := m.url
			if m.fake != nil {
				base = m.fake.URL()
			}
			if sp.wire == configv1.WireFormat_WIRE_FORMAT_OPENAI {
				base += "/v1"
			}
			cm := &configv1.Member{Name: m.name, BaseUrl: base, Weight: max(m.weight, 1), Order: max(m.order, 1)}
			if m.edit != nil {
				m.edit(cm)
			}
			rec.Members = append(rec.Members, cm)
			h.fakes[m.name] = m.fake
		}
		if sp.edit != nil {
			sp.edit(rec)
		}
		snap.Records = append(snap.Records, rec)
	}
	host := "127.0.0.1"
	if len(specs) > 0 && specs[0].secretHost != "" {
		host = specs[0].secretHost
	}
	keyValue := []byte(providerKey)
	if len(specs) > 0 && specs[0].keyValue != nil {
		keyValue = specs[0].keyValue
	}
	if len(specs) == 0 || !specs[0].noSecret {
		secretList = append(secretList,
			secrets.Secret{Name: "key", TenantID: "tenant-1", Hosts: []string{host}, Value: keyValue},
			secrets.Secret{Name: "aws", TenantID: "tenant-1", Hosts: []string{host}, Value: []byte(awsID + ":" + awsSecret)})
	}
	if opts.tenant != nil {
		opts.tenant(snap)
	}
	table, err := compile.Compile(snap, opts.cluster)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	store, err := secrets.NewStore(secretList)
	if err != nil {
		t.Fatal(err)
	}
	h.table = table
	reg := gateway.NewRegistry()
	reg.Put(table)
	h.reg = reg
	transport := netguard.NewTransport(nil, nil)
	t.Cleanup(transport.CloseIdleConnections)
	adapters := map[routing.WireFormat]wire.Adapter{
		routing.WireOpenAI: openai.Adapter{}, routing.WireAnthropic: anthropic.Adapter{}, routing.WireBedrock: bedrock.Adapter{}, routing.WireGemini: gemini.Adapter{},
	}
	if opts.adapters != nil {
		opts.adapters(adapters)
	}
	cfg := gateway.Config{
		EdgeID: "edge-test", Registry: reg, States: h.states, Adapters: adapters,
		Signer: upauth.New(store, &http.Client{Transport: transport}, time.Now), SignErrorKind: upauth.Kind,
		Transport: transport, Sink: sink, KeepAlive: 150 * time.Millisecond, Budgets: opts.budgets, Log: opts.log,
	}
	if opts.cfg != nil {
		opts.cfg(&cfg)
	}
	gw, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.gw = gw
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// pool is an openai record "pool" serving gpt-x over members in tiers 1, 2, …
// in the order given, so the first member is always tried first.
func pool(t *testing.T, names ...string) recordSpec {
	sp := recordSpec{name: "pool", wire: configv1.WireFormat_WIRE_FORMAT_OPENAI, models: []*configv1.Model{chatModel("gpt-x")}}
	for i, n := range names {
		acct := "acct-" + n // separate deployments: separate capacity
		sp.members = append(sp.members, fakeMember{name: n, order: uint32(i + 1), fake: newFake(t, fakeprovider.Options{}),
			edit: func(m *configv1.Member) { m.Account = &acct }})
	}
	return sp
}

type result struct {
	status int
	header http.Header
	body   []byte
}

func (h *harness) post(path, body string, hdr ...string) result {
	h.t.Helper()
	return h.postCtx(context.Background(), path, body, hdr...)
}

func (h *harness) postCtx(ctx context.Context, path, body string, hdr ...string) result {
	h.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+callerKey)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return result{resp.StatusCode, resp.Header, b}
}

const chatBody = `{"model":"gpt-x","messages":[{"role":"user","content":"hello"}]}`

// errBody is the gateway's OpenAI-format error body.
type errBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Code    string  `json:"code"`
		Param   *string `json:"param"`
	} `json:"error"`
	Weir struct {
		Provider string `json:"provider"`
		Attempts []struct {
			Member  string `json:"member"`
			Status  int    `json:"status"`
			Outcome string `json:"outcome"`
			Reason  string `json:"reason"`
		} `json:"attempts"`
	} `json:"weir"`
}

func decodeErr(t *testing.T, b []byte) errBody {
	t.Helper()
	var e errBody
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("error body %s: %v", b, err)
	}
	return e
}

// sseEvents splits an SSE body into events' data lines and names.
func sseEvents(b []byte) (names, data []string) {
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	name := ""
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "event: "):
			name = strings.TrimPrefix(l, "event: ")
		case strings.HasPrefix(l, "data: "):
			names = append(names, name)
			data = append(data, strings.TrimPrefix(l, "data: "))
			name = ""
		}
	}
	return names, data
}

// lastRecord waits for n call records and returns the last.
func (h *harness) record(n int) *callRecord {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	recs := h.sink.Wait(ctx, n)
	if len(recs) < n {
		h.t.Fatalf("%d call records, want %d", len(recs), n)
	}
	return &callRecord{recs[n-1]}
}
