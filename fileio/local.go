package fileio

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Local is the local file system (absolute paths, file:/p, file:///p,
// file://localhost/p).
type Local struct{}

// LocalPath turns a local location into a path; another scheme or a host
// other than localhost is an error naming it.
func LocalPath(loc string) (string, error) {
	if strings.HasPrefix(loc, "/") {
		return filepath.FromSlash(filepath.Clean(loc)), nil
	}
	u, p, err := parseLoc(loc)
	if err != nil {
		return "", err
	}
	if !strings.EqualFold(u.Scheme, "file") {
		if u.Scheme == "" {
			return "", fmt.Errorf("location %q is relative", loc)
		}
		return "", fmt.Errorf("location %s: scheme %q is not a local file", loc, u.Scheme)
	}
	if u.Host != "" && !strings.EqualFold(u.Host, "localhost") {
		return "", fmt.Errorf("location %q names host %q; only local files are supported", loc, u.Host)
	}
	if u.Path == "" {
		return "", fmt.Errorf("location %q has no path", loc)
	}
	return filepath.FromSlash(p), nil
}

// Open implements IO.
func (Local) Open(_ context.Context, loc string) (io.ReadCloser, error) {
	p, err := LocalPath(loc)
	if err != nil {
		return nil, err
	}
	return os.Open(p)
}

// Create implements IO: the data goes to a temporary name in the same
// folder, then a hard link gives it its name (link, unlike rename, never
// replaces an existing file), then the temporary name goes.
func (Local) Create(_ context.Context, loc string, data []byte) error {
	p, err := LocalPath(loc)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return err
	}
	if err := os.Link(tmp, p); err != nil {
		if errors.Is(err, iofs.ErrExist) {
			return &PathError{Op: "create", Loc: loc, Err: ErrExist}
		}
		return err
	}
	return nil
}

// Delete implements IO.
func (Local) Delete(_ context.Context, loc string) error {
	p, err := LocalPath(loc)
	if err != nil {
		return err
	}
	return os.Remove(p)
}

// List implements IO.
func (Local) List(_ context.Context, dir string, fn func(File) error) error {
	p, err := LocalPath(dir)
	if err != nil {
		return err
	}
	return filepath.WalkDir(p, func(q string, d iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return fn(File{Location: "file:" + filepath.ToSlash(q), Size: info.Size()})
	})
}

// RemoveTree implements IO through an os.Root opened at root: no path
// component may leave root, and a symlink is removed as a link, never
// followed.
func (Local) RemoveTree(_ context.Context, root, dir string) (int, error) {
	r, err := LocalPath(root)
	if err != nil {
		return 0, err
	}
	d, err := LocalPath(dir)
	if err != nil {
		return 0, err
	}
	if !under(d, r) {
		return 0, fmt.Errorf("%s is not below %s", dir, root)
	}
	fsRoot, err := os.OpenRoot(r)
	if err != nil {
		return 0, err
	}
	defer fsRoot.Close()
	rel := strings.TrimPrefix(d, strings.TrimSuffix(r, "/")+"/")
	if _, err := fsRoot.Lstat(rel); err != nil {
		return 0, err // a missing directory is reported, not silently "purged"
	}
	n := 0
	_ = iofs.WalkDir(fsRoot.FS(), rel, func(_ string, e iofs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			n++
		}
		return nil
	})
	return n, fsRoot.RemoveAll(rel)
}
