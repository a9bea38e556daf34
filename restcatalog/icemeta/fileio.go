package icemeta

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// FS is the little a catalog needs of a file system: read a file, write
// one (creating its directory), remove one.
type FS interface {
	Open(loc string) (io.ReadCloser, error)
	WriteFile(loc string, data []byte) error
	Remove(loc string) error
}

// OpenFS returns the file system of a location: local files (file: URIs
// and absolute paths) only; any other scheme is an error naming it.
func OpenFS(loc string) (FS, error) {
	if _, err := localPath(loc); err != nil {
		return nil, err
	}
	return localFS{}, nil
}

type localFS struct{}

// localPath turns /p, file:/p, file:///p and file://localhost/p into /p.
func localPath(loc string) (string, error) {
	if strings.HasPrefix(loc, "/") {
		return filepath.FromSlash(loc), nil
	}
	u, err := url.Parse(loc)
	if err != nil {
		return "", fmt.Errorf("location %q: %v", loc, err)
	}
	if !strings.EqualFold(u.Scheme, "file") {
		if u.Scheme == "" {
			return "", fmt.Errorf("location %q is relative", loc)
		}
		return "", fmt.Errorf("scheme %q of %s is not supported: this proxy reads and writes Iceberg metadata on local file: paths only", u.Scheme, loc)
	}
	if u.Host != "" && !strings.EqualFold(u.Host, "localhost") {
		return "", fmt.Errorf("location %q names host %q; only local files are supported", loc, u.Host)
	}
	if u.Path == "" {
		return "", fmt.Errorf("location %q has no path", loc)
	}
	return filepath.FromSlash(u.Path), nil
}

func (localFS) Open(loc string) (io.ReadCloser, error) {
	p, err := localPath(loc)
	if err != nil {
		return nil, err
	}
	return os.Open(p)
}

func (localFS) WriteFile(loc string, data []byte) error {
	p, err := localPath(loc)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	// Write to a temporary name and rename: a reader never sees half a file.
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), p); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

func (localFS) Remove(loc string) error {
	p, err := localPath(loc)
	if err != nil {
		return err
	}
	return os.Remove(p)
}
