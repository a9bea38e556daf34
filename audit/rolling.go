package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// RollingFile is an io.WriteCloser that appends to path and rolls the file
// over by size: when a Write would take the file past maxBytes, path is
// renamed to path.1 (path.1 to path.2, and so on) and a fresh path is opened.
// At most `backups` old files are kept; the oldest is removed. With backups
// == 0 the file is simply truncated when it is full.
//
// A single Write is never split across two files, so a writer that emits one
// record per Write (like Logger) keeps every file valid JSON Lines. A single
// record larger than maxBytes is written whole to a fresh file.
//
// Write, Sync and Close are safe for concurrent use.
type RollingFile struct {
	path     string
	maxBytes int64
	backups  int

	mu     sync.Mutex
	f      *os.File
	size   int64
	closed bool
}

// OpenRollingFile opens (creating it and its parent directories if needed)
// a size-rolled file. maxBytes must be positive and backups must not be
// negative.
func OpenRollingFile(path string, maxBytes int64, backups int) (*RollingFile, error) {
	if path == "" {
		return nil, errors.New("audit: rolling file path is empty")
	}
	if maxBytes <= 0 {
		return nil, fmt.Errorf("audit: rolling file %q: max size must be positive bytes, got %d", path, maxBytes)
	}
	if backups < 0 {
		return nil, fmt.Errorf("audit: rolling file %q: backup count must not be negative, got %d", path, backups)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("audit: rolling file %q: create directory: %w", path, err)
		}
	}
	rf := &RollingFile{path: path, maxBytes: maxBytes, backups: backups}
	if err := rf.open(); err != nil {
		return nil, err
	}
	return rf, nil
}

// Path returns the path of the active file.
func (rf *RollingFile) Path() string { return rf.path }

func (rf *RollingFile) open() error {
	f, err := os.OpenFile(rf.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("audit: open %q: %w", rf.path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit: stat %q: %w", rf.path, err)
	}
	rf.f = f
	rf.size = st.Size()
	return nil
}

func (rf *RollingFile) backupName(i int) string { return rf.path + "." + strconv.Itoa(i) }

// roll closes the active file, shifts the backups and opens a fresh file.
// Caller holds rf.mu.
func (rf *RollingFile) roll() error {
	if rf.f != nil {
		err := rf.f.Close()
		rf.f = nil
		if err != nil {
			return fmt.Errorf("audit: close %q before rolling: %w", rf.path, err)
		}
	}
	if rf.backups == 0 {
		f, err := os.OpenFile(rf.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("audit: truncate %q: %w", rf.path, err)
		}
		rf.f, rf.size = f, 0
		return nil
	}
	if err := os.Remove(rf.backupName(rf.backups)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("audit: remove oldest backup: %w", err)
	}
	for i := rf.backups - 1; i >= 1; i-- {
		if err := os.Rename(rf.backupName(i), rf.backupName(i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("audit: shift backup: %w", err)
		}
	}
	if err := os.Rename(rf.path, rf.backupName(1)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("audit: roll %q: %w", rf.path, err)
	}
	return rf.open()
}

// Write appends p to the active file, rolling first if p would not fit.
func (rf *RollingFile) Write(p []byte) (int, error) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if rf.closed {
		return 0, fmt.Errorf("audit: write %q: %w", rf.path, os.ErrClosed)
	}
	if rf.f == nil {
		// A previous roll failed half way; try to get a file again.
		if err := rf.open(); err != nil {
			return 0, err
		}
	}
	if rf.size > 0 && rf.size+int64(len(p)) > rf.maxBytes {
		if err := rf.roll(); err != nil {
			return 0, err
		}
	}
	n, err := rf.f.Write(p)
	rf.size += int64(n)
	if err != nil {
		return n, fmt.Errorf("audit: write %q: %w", rf.path, err)
	}
	return n, nil
}

// Sync flushes the active file to stable storage.
func (rf *RollingFile) Sync() error {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if rf.f == nil {
		return nil
	}
	return rf.f.Sync()
}

// Close closes the active file. Later writes fail with os.ErrClosed.
func (rf *RollingFile) Close() error {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if rf.closed {
		return nil
	}
	rf.closed = true
	if rf.f == nil {
		return nil
	}
	err := rf.f.Close()
	rf.f = nil
	return err
}
