// Package controlplane is the root of the control plane module: store, admin
// API, snapshot builder, publisher, usage ingest and console handlers live
// under internal/, the server and the weir CLI under cmd/ (DESIGN.md §2).
package controlplane
