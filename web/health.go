package web

import (
	"strconv"
	"strings"
	"time"
)

// Cell states of the pool health grid (HealthCell.State, the data-state
// attribute of a cell and of its cell-state badge), most urgent first.
const (
	// StateSilent: the edge stopped reporting, or its view of the member
	// expired; the cell shows the edge's last view, greyed out.
	StateSilent = "silent"
	// StateDisabled: the edge disabled the member after repeated 401s
	// (R-FAIL-6) until it is reset.
	StateDisabled = "disabled"
	// StateSpent: the edge marked the member's quota spent (R-FAIL-3).
	StateSpent = "spent"
	// StateCooling: the member is in a cooldown on that edge.
	StateCooling = "cooling"
	// StateOff: the member is switched off in the configuration.
	StateOff = "off"
	// StateHealthy: the edge reports the member usable.
	StateHealthy = "healthy"
	// StateUnknown: the edge has no view of the member (yet).
	StateUnknown = "unknown"
)

// HealthView is the pool health page's data: for each record, a grid of
// its members × the edges, with the doctor's findings above.
type HealthView struct {
	// Now is the server's clock when the data was read (countdowns and ages
	// start from it).
	Now time.Time
	// Live is the SSE source that pushes the re-rendered grid ("" for none).
	Live string
	CSRF string
	// Tenant is the tenant shown ("" when only managed records are).
	Tenant string
	// Findings are the doctor's, most severe first; FindingsError is set
	// when the doctor could not be asked.
	Findings      []Finding
	FindingsError string
	// Edges are the columns of every grid, by id.
	Edges   []HealthEdge
	Records []HealthRecord
	// CanReset shows the reset buttons (admins who may change records).
	CanReset bool
}

// Finding is one doctor finding (R-OBS-2).
type Finding struct {
	Code     string
	Severity string // "error", "warning" or "info"
	Message  string
	Hint     string
	Record   string
	Members  []string
	Edges    []string
	Since    time.Time
}

// HealthEdge is one edge (a column of the grids).
type HealthEdge struct {
	ID       string
	Silent   bool
	LastSeen time.Time
}

// HealthRecord is one provider record and its grid.
type HealthRecord struct {
	// Key identifies the record in test ids and forms: its name, with
	// "managed-" in front for a managed record.
	Key  string
	Name string
	// Scope is "managed" for a managed record, "" for the tenant's own.
	Scope   string
	Pool    bool
	Members []HealthMember
}

// HealthMember is one row of a grid; Cells follow HealthView.Edges.
type HealthMember struct {
	Name string
	Off  bool
	// Format is the member's wire format as the edges report it ("gemini";
	// "" when no edge has a view of it).
	Format string
	Cells  []HealthCell
}

// HealthCell is one edge's view of one member (R-OBS-1).
type HealthCell struct {
	Edge  string
	State string
	// HasView is false when the edge has no view of the member.
	HasView bool
	// Dims are the headroom bars, one per dimension the view carries.
	Dims []Dim
	// Headroom is the smallest remaining/limit, 0..1 (when any dimension
	// is known).
	Headroom       float64
	CooldownUntil  time.Time
	CooldownKind   string
	CooldownReason string
	// Cooling is true while the cooldown runs.
	Cooling      bool
	LastStatus   int
	LastStatusAt time.Time
	Spent        bool
	Disabled     bool
	InFlight     int
	// MaxInFlight is the member's cap on that edge (its share of the
	// declared max_in_flight, R-CAP-1); 0: none.
	MaxInFlight int
	// RequestsToday counts that edge's calls to the member in the current
	// day of the record's day_zone; RPDShare is the edge's share of the
	// declared rpd (R-HEAD-6), 0: none.
	RequestsToday, RPDShare uint64
	// Format is the member's wire format on that edge.
	Format     string
	Refusals   int
	ObservedAt time.Time
	Counters   []Counter
}

// Dim is one rate-limit dimension's headroom.
type Dim struct {
	// Name is "requests", "input-tokens", "output-tokens" or "tokens".
	Name      string
	Limit     int64
	Remaining int64
	ResetAt   time.Time
	Source    string // "headers" or "declared"
}

// Counter is one pool event counter of a view.
type Counter struct {
	Name  string
	Value uint64
}

// Label is the dimension's name for people.
func (d Dim) Label() string { return strings.NewReplacer("-", " ", "_", " ").Replace(d.Name) }

// meterMax is the meter's max: the limit, at least 1.
func (d Dim) meterMax() string { return strconv.FormatInt(max(d.Limit, 1), 10) }

func (d Dim) meterValue() string {
	return strconv.FormatInt(min(max(d.Remaining, 0), max(d.Limit, 1)), 10)
}

func (d Dim) meterLow() string  { return strconv.FormatInt(max(d.Limit, 1)/5, 10) }
func (d Dim) meterHigh() string { return strconv.FormatInt(max(d.Limit, 1)/2, 10) }

func (d Dim) text() string {
	return d.Label() + ": " + strconv.FormatInt(d.Remaining, 10) + " of " + strconv.FormatInt(d.Limit, 10) + " left"
}

func (d Dim) title() string {
	t := d.text()
	if d.Source != "" {
		t += " (" + d.Source + ")"
	}
	if !d.ResetAt.IsZero() {
		t += ", resets " + humanTime(d.ResetAt)
	}
	return t
}

// stateLabel is the visible text of a state.
func stateLabel(s string) string {
	switch s {
	case StateUnknown:
		return "no view"
	case "":
		return "no view"
	}
	return s
}

func stateClass(s string) string { return "state state-" + s }

func (c HealthCell) cooldownTitle() string {
	t := "cooldown"
	if c.CooldownKind != "" {
		t += " (" + c.CooldownKind + ")"
	}
	if c.CooldownReason != "" {
		t += ": " + c.CooldownReason
	}
	return t + " until " + humanTime(c.CooldownUntil)
}

func (c HealthCell) cellTitle(edge string) string {
	if !c.HasView {
		return "edge " + edge + " has no view of this member"
	}
	t := "edge " + edge + ": " + stateLabel(c.State) + ", observed " + humanTime(c.ObservedAt)
	if c.Refusals > 0 {
		t += ", " + strconv.Itoa(c.Refusals) + " refusals in a row"
	}
	for _, k := range c.Counters {
		t += ", " + k.Name + " " + strconv.FormatUint(k.Value, 10)
	}
	return t
}

func severityClass(s string) string {
	switch s {
	case "error":
		return "finding finding-error"
	case "warning":
		return "finding finding-warning"
	}
	return "finding finding-info"
}

// Ago formats the time since t the way console.js's data-since ticks do:
// "12s ago", "3m ago", "2h ago", "4d ago".
func Ago(t, now time.Time) string {
	d := now.Sub(t)
	if d < time.Second {
		return "just now"
	}
	s := int(d / time.Second)
	switch {
	case s < 60:
		return itoa(s) + "s ago"
	case s < 3600:
		return itoa(s/60) + "m ago"
	case s < 86400:
		return itoa(s/3600) + "h ago"
	}
	return itoa(s/86400) + "d ago"
}

func edgeClass(e HealthEdge) string {
	if e.Silent {
		return "edge-col stale"
	}
	return "edge-col"
}

func joinNames(xs []string) string { return strings.Join(xs, ", ") }

func itoaInt(n int) string { return strconv.Itoa(n) }

func boolAttr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func int64s(n int64) string { return strconv.FormatInt(n, 10) }

// inFlightText is "3 in flight", or "3/5 in flight" against a cap
// (R-CAP-1).
func (c HealthCell) inFlightText() string {
	if c.MaxInFlight > 0 {
		return strconv.Itoa(c.InFlight) + "/" + strconv.Itoa(c.MaxInFlight) + " in flight"
	}
	return strconv.Itoa(c.InFlight) + " in flight"
}

// todayText is "120/1000 today" against the edge's rpd share (R-HEAD-6),
// "120 today" without one.
func (c HealthCell) todayText() string {
	if c.RPDShare > 0 {
		return strconv.FormatUint(c.RequestsToday, 10) + "/" + strconv.FormatUint(c.RPDShare, 10) + " today"
	}
	return strconv.FormatUint(c.RequestsToday, 10) + " today"
}
