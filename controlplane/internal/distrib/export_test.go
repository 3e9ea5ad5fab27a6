package distrib

// Test hooks, for the external tests of this package.

// SetAfterPut makes p run f after each snapshot put and before the commit
// that marks the outbox rows published; an error from f aborts the drain
// there, as a crash would.
func SetAfterPut(p *Publisher, f func() error) { p.afterPut = f }

// SetAfterCommit makes in run f after each commit and before the acks;
// when f returns false the acks are skipped, as a crash there would.
func SetAfterCommit(in *Ingest, f func() bool) { in.afterCommit = f }

// SetOnBatch makes in report its counts after each batch.
func SetOnBatch(in *Ingest, f func(IngestStats)) { in.onBatch = f }

// GrantSize exposes grantSize.
var GrantSize = grantSize

// SnapshotVersion exposes snapshotVersion.
var SnapshotVersion = snapshotVersion

// PutIfNewer exposes putIfNewer.
var PutIfNewer = putIfNewer

// StoredVersion exposes storedVersion.
var StoredVersion = storedVersion
