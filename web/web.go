// Package web holds the console's templ components and pages and its static
// assets. Views only: no database access, no API calls (DESIGN.md §2). The
// handlers live in weir.dev/controlplane/internal/console; they fetch data
// through the admin API and hand plain view structs to the components here.
//
// Exported API:
//
//   - Static: the embedded static files (static/console.css,
//     static/console.js), served by the console under /console/static/.
//   - PageMeta, Flash, NavItem, Nav: what every page's Layout needs.
//   - Layout(p, body), BareLayout(title, body): the page shells (the second
//     for pages without a session: login, errors before sign-in).
//   - Forms: CSRFInput, FormField(Field), ProblemSummary(Problems),
//     ButtonForm(Action); Problems carries the API's validation problems
//     keyed by proto field path, so that a form whose inputs are named after
//     the request's field paths shows each problem next to its input.
//   - Live parts: Live (an SSE-fed region), Countdown, CopyButton,
//     Timestamp.
//   - Pages: LoginPage, ErrorBody, HomePage (placeholder), TenantsPage.
//
// Conventions for page authors: every element a test looks for carries a
// stable data-testid; no inline script and no style attributes (the console's
// Content-Security-Policy refuses both; use classes, SVG presentation
// attributes, <meter> or <progress>); every POST form includes
// @CSRFInput(p.CSRF).
package web

import "embed"

// Static holds the console's stylesheet and script under "static/".
//
//go:embed static
var Static embed.FS
