// Package web holds the console's templ components and pages and its static
// assets. Views only: no database access, no API calls (DESIGN.md §2). The
// handlers live in weir.dev/controlplane/internal/console; they fetch data
// through the admin API and hand plain view structs to the components here.
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
