package distrib

import (
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// diskCache keeps the last good config snapshots on local disk, one file
// per tenant ("tenant-<hex of id>.pb") and "cluster.pb", each the raw bytes
// of the KV value. Writes are write-then-rename with the file and the
// directory fsync'd, so a crash leaves either the old or the new snapshot,
// never a torn one. Writes run on a background goroutine, coalesced per key,
// so a cold start with thousands of tenants does not wait on fsyncs.
type diskCache struct {
	dir string
	log *slog.Logger

	mu      sync.Mutex
	pending map[string][]byte // file name → bytes; nil bytes = remove
	busy    bool
	idle    *sync.Cond
	wake    chan struct{}
	done    chan struct{}
	closed  bool
}

const (
	clusterFile  = "cluster.pb"
	tenantPrefix = "tenant-"
	fileSuffix   = ".pb"
)

func tenantFile(tenantID string) string {
	return tenantPrefix + hex.EncodeToString([]byte(tenantID)) + fileSuffix
}

// openDiskCache creates dir if needed and starts the writer.
func openDiskCache(dir string, log *slog.Logger) (*diskCache, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("distrib: config cache: %w", err)
	}
	c := &diskCache{dir: dir, log: log, pending: map[string][]byte{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	c.idle = sync.NewCond(&c.mu)
	go c.writer()
	return c, nil
}

// cached is what the cache holds: raw snapshot bytes.
type cached struct {
	cluster []byte
	tenants map[string][]byte // file name → bytes
}

// load reads every cached snapshot. Unreadable files are logged and skipped;
// leftover temporary files are removed.
func (c *diskCache) load() (cached, error) {
	out := cached{tenants: map[string][]byte{}}
	ents, err := os.ReadDir(c.dir)
	if err != nil {
		return out, fmt.Errorf("distrib: config cache: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		p := filepath.Join(c.dir, name)
		switch {
		case strings.HasSuffix(name, ".tmp"):
			_ = os.Remove(p)
		case name == clusterFile || strings.HasPrefix(name, tenantPrefix) && strings.HasSuffix(name, fileSuffix):
			b, err := os.ReadFile(p)
			if err != nil {
				c.log.Error("config cache: unreadable snapshot skipped", "file", name, "err", err)
				continue
			}
			if name == clusterFile {
				out.cluster = b
			} else {
				out.tenants[name] = b
			}
		}
	}
	return out, nil
}

// putTenant schedules a tenant's snapshot to be written.
func (c *diskCache) putTenant(tenantID string, raw []byte) { c.schedule(tenantFile(tenantID), raw) }

// removeTenant schedules a tenant's file to be removed.
func (c *diskCache) removeTenant(tenantID string) { c.schedule(tenantFile(tenantID), nil) }

// putCluster schedules the cluster snapshot to be written.
func (c *diskCache) putCluster(raw []byte) { c.schedule(clusterFile, raw) }

func (c *diskCache) schedule(name string, raw []byte) {
	c.mu.Lock()
	if !c.closed {
		c.pending[name] = raw
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// flush waits until every scheduled write is on disk.
func (c *diskCache) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.pending) > 0 || c.busy {
		c.idle.Wait()
	}
}

// close flushes and stops the writer.
func (c *diskCache) close() {
	c.flush()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	close(c.done)
}

func (c *diskCache) writer() {
	for {
		select {
		case <-c.done:
			return
		case <-c.wake:
		}
		for {
			c.mu.Lock()
			batch := c.pending
			if len(batch) == 0 {
				c.busy = false
				c.idle.Broadcast()
				c.mu.Unlock()
				break
			}
			c.pending, c.busy = map[string][]byte{}, true
			c.mu.Unlock()
			if err := c.write(batch); err != nil {
				c.log.Error("config cache: write failed; the in-memory config is unaffected", "err", err)
			}
		}
	}
}

// write puts one batch on disk: each file written to a temporary name,
// fsync'd and renamed over the old one; then the directory is fsync'd once.
func (c *diskCache) write(batch map[string][]byte) error {
	var errs []error
	for name, raw := range batch {
		p := filepath.Join(c.dir, name)
		if raw == nil {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		if err := writeFileSync(p, raw); err != nil {
			errs = append(errs, err)
		}
	}
	if err := syncDir(c.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// writeFileSync replaces path with data atomically and durably.
func writeFileSync(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("distrib: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("distrib: writing %s: %w", filepath.Base(path), err)
	}
	return nil
}

// syncDir fsyncs a directory so renames and removals in it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("distrib: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("distrib: fsync %s: %w", dir, err)
	}
	return nil
}
