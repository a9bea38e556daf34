// Package fileio is the proxy's one file layer (Iceberg's FileIO notion):
// open a file, write a new file whole or not at all, delete a file, list the
// files under a prefix, and delete a directory tree below an allow-listed
// root. A Resolver picks the implementation by the location's scheme, as
// Iceberg's ResolvingFileIO does, per catalog, from the catalog's conf.* keys
// as Hadoop and Hive name them:
//
//   - local files (no scheme, file:), always;
//   - HDFS (hdfs://) when the catalog sets fs.defaultFS, dfs.nameservices or
//     a dfs.namenode.rpc-address; Kerberos with the proxy's keytab
//     (security.client-principal / -keytab) when it sets
//     hadoop.security.authentication=kerberos; the caller as an HDFS proxy
//     user when impersonation is on for the catalog;
//   - S3 (s3://, s3a://) from the catalog's fs.s3a.* keys.
//
// The Iceberg REST frontend's metadata reader and writer, its purge and the
// external-table drop purge all go through it.
package fileio

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"net/url"
	"path"
	"strings"
)

// IO is one file system. Locations are full URIs (or absolute local
// paths); every method is safe for concurrent use.
type IO interface {
	// Open opens a file for reading; a missing file is an error matching
	// fs.ErrNotExist.
	Open(ctx context.Context, loc string) (io.ReadCloser, error)
	// Create writes a new file: afterwards it exists whole, or the call
	// failed and no reader ever saw part of it. An existing file is never
	// replaced: the error then matches fs.ErrExist.
	Create(ctx context.Context, loc string, data []byte) error
	// Delete removes one file; a missing one is an error matching
	// fs.ErrNotExist.
	Delete(ctx context.Context, loc string) error
	// List calls fn for every file below the directory dir (recursively),
	// in no particular order; directories themselves are not listed.
	List(ctx context.Context, dir string, fn func(File) error) error
	// RemoveTree deletes the directory dir and everything below it. dir
	// must lie strictly below root (the allow-listed prefix the caller
	// checked it against): implementations that can (local files) keep
	// the whole deletion inside root. A missing dir matches fs.ErrNotExist.
	// It returns how many files it deleted where the file system tells.
	RemoveTree(ctx context.Context, root, dir string) (int, error)
}

// File is one listed file.
type File struct {
	Location string
	Size     int64
}

// Errors the implementations wrap.
var (
	ErrNotExist = iofs.ErrNotExist
	ErrExist    = iofs.ErrExist
)

type userKey struct{}

// WithUser names the user a request runs for: with impersonation on, HDFS
// writes and deletes are done as that user (an HDFS proxy user of the
// proxy's principal). A short name ("alice"), not a principal.
func WithUser(ctx context.Context, user string) context.Context {
	if user == "" {
		return ctx
	}
	return context.WithValue(ctx, userKey{}, user)
}

// UserFrom returns the user WithUser put in ctx, "" when none.
func UserFrom(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}

// ShortName turns a principal (alice@REALM, alice/host@REALM) into the
// user name Hadoop's default auth_to_local rule gives it.
func ShortName(principal string) string {
	if i := strings.IndexAny(principal, "/@"); i > 0 {
		return principal[:i]
	}
	return principal
}

// Scheme returns the lower-cased scheme of a location: "file" for an
// absolute path.
func Scheme(loc string) (string, error) {
	if strings.HasPrefix(loc, "/") {
		return "file", nil
	}
	u, err := url.Parse(loc)
	if err != nil {
		return "", fmt.Errorf("location %q: %v", loc, err)
	}
	if u.Scheme == "" {
		return "", fmt.Errorf("location %q is relative", loc)
	}
	return strings.ToLower(u.Scheme), nil
}

// parseLoc splits a location into authority and a clean absolute path; a
// ".." segment, a query or a fragment is refused.
func parseLoc(loc string) (*url.URL, string, error) {
	u, err := url.Parse(loc)
	if err != nil {
		return nil, "", fmt.Errorf("location %q: %v", loc, err)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return nil, "", fmt.Errorf("location %q: a query, fragment or opaque part is not a path", loc)
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == ".." {
			return nil, "", fmt.Errorf("location %q contains '..'", loc)
		}
	}
	p := u.Path
	if p == "" {
		p = "/"
	}
	return u, path.Clean("/" + p), nil
}

// under reports whether dir lies strictly below root, segment by segment.
func under(dir, root string) bool {
	root = strings.TrimSuffix(root, "/")
	return strings.HasPrefix(dir, root+"/") && len(dir) > len(root)+1
}

// PathError is a failed operation on one location.
type PathError struct {
	Op, Loc string
	Err     error
}

func (e *PathError) Error() string { return e.Op + " " + e.Loc + ": " + e.Err.Error() }
func (e *PathError) Unwrap() error { return e.Err }

// IsNotExist reports whether err says a file does not exist.
func IsNotExist(err error) bool { return errors.Is(err, ErrNotExist) }
