package web

// ProviderDetailView is a record's page: its settings, its members with
// every field, and the add-member form.
type ProviderDetailView struct {
	CSRF  string
	Scope string
	Name  string
	// Kind is "plain" or "pool".
	Kind, Preset, Wire string
	// ReadOnly is set for a managed record shared with the tenant, and for
	// admins who may not change records.
	ReadOnly bool
	Revision uint64
	// RoutingSummary says in one line how the edges route over the record
	// (the admin API's ProviderDetail.routing_summary); the page opens
	// with it.
	RoutingSummary string
	Settings       []Setting
	// Warnings are the record's current warnings.
	Warnings []Warning
	Members  []MemberRow
	// Add is the add-member form (shown unless ReadOnly).
	Add MemberForm
	// CanShare offers sharing the managed record with tenants (cluster
	// admins); SharedWith are the tenants it is shared with, ShareWith
	// those it could be shared with.
	CanShare   bool
	SharedWith []string
	ShareWith  []Option
}

// Setting is one labelled value of a record or member.
type Setting struct {
	// Key is stable (test ids): "base_url", "key_secret", "limits"...
	Key, Label, Value string
	// Inherited marks a member's value that comes from the record.
	Inherited bool
}

// MemberRow is one member of a record's page.
type MemberRow struct {
	Name string
	Off  bool
	// Primary is a plain record's own endpoint (no edit, off or remove).
	Primary  bool
	Settings []Setting
}

// MemberForm adds a member (Edit false) or edits one (Edit true). Its
// inputs are named after AddPoolMemberRequest's (and
// UpdatePoolMemberRequest's) field paths.
type MemberForm struct {
	CSRF   string
	Scope  string
	Action string
	Edit   bool
	Record string
	// Member is the new member's name (add) or the member edited.
	Member string
	// Revision is sent back as expected_revision (edit).
	Revision string
	// ShowRecordMember asks for the name of a plain record's own endpoint
	// once it becomes a member.
	ShowRecordMember                          bool
	RecordMember                              string
	Preset                                    string
	BaseURL, KeySecret, Region, Weight, Order string
	RPM, InputTPM, OutputTPM                  string
	// RPD and MaxInFlight are the member's daily and concurrency limits
	// (R-HEAD-6, R-CAP-1); Wire its own wire format ("": the record's,
	// R-FMT-4).
	RPD, MaxInFlight, Wire      string
	Models, Account, APIVersion string
	// Auth is the member's own auth (Kind "" with no header: the
	// record's); AuthInherit labels that choice with the record's auth.
	Auth        AuthForm
	AuthInherit string
	// ModelMap and Tags are "key=value" lines; RetainsData is "", "yes"
	// or "no" ("": the record's, labelled RetainsInherit).
	ModelMap, Tags, RetainsData string
	RetainsInherit              string
	// Prices are the member's own price rows (blank rows are ignored);
	// RecordPrices the record's, by model, shown as placeholders.
	Prices       []PriceRow
	RecordPrices map[string]PriceRow
	// Inherit are placeholders: the record's values a member inherits, by
	// input name.
	Inherit  map[string]string
	Problems Problems
	// Warnings are R-SEC-4 warnings found before saving.
	Warnings []Warning
	// Preview, when not nil, is what saving the form would change.
	Preview *Preview
}

// MemberEditView is the page of one member's edit form.
type MemberEditView struct {
	Record, Scope, Member string
	Form                  MemberForm
}

func (f MemberForm) submitID() string {
	if f.Edit {
		return "member-edit-submit"
	}
	return "member-add-submit"
}

func (f MemberForm) previewID() string {
	if f.Edit {
		return "member-edit-preview"
	}
	return "member-add-preview"
}

func (f MemberForm) formID() string {
	if f.Edit {
		return "member-edit-form"
	}
	return "member-add-form"
}

func (f MemberForm) submitLabel() string {
	if f.Edit {
		return "Save member"
	}
	return "Add member"
}

func (f MemberForm) field(name, label, typ, value, hint string) Field {
	return Field{Name: name, Label: label, Type: typ, Value: value, Hint: hint, Placeholder: f.Inherit[name], Problem: f.Problems.For(name), Autocomplete: "off"}
}

func memberTestID(prefix, member string) string { return prefix + TestIDPart(member) }
