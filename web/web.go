// Package web holds the console's templ components, pages and static
// assets. Views only: no database access (DESIGN.md §2). The console itself
// comes with the web console issue.
package web
