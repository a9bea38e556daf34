package restcatalog

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/hms-proxy/hms-proxy/restcatalog/icemeta"
)

// normalizePrefix turns an allowed purge prefix into the comparable form of
// normalizeLocation, ending in "/".
func normalizePrefix(p string) (string, error) {
	n, err := normalizeLocation(p)
	if err != nil {
		return "", fmt.Errorf("prefix %q: %v", p, err)
	}
	if !strings.HasSuffix(n, "/") {
		n += "/"
	}
	return n, nil
}

// normalizeLocation makes locations comparable: the scheme lower-cased, the
// local forms /p, file:/p and file:///p made one, the path cleaned. A path
// with ".." segments is refused rather than resolved: a manifest naming
// allowed/../elsewhere must not pass a prefix check.
func normalizeLocation(loc string) (string, error) {
	if loc == "" {
		return "", fmt.Errorf("empty location")
	}
	u, err := url.Parse(loc)
	if err != nil {
		return "", err
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme == "" {
		if !strings.HasPrefix(loc, "/") {
			return "", fmt.Errorf("%q is relative", loc)
		}
		scheme = "file"
	}
	p := u.Path
	if u.Opaque != "" {
		return "", fmt.Errorf("%q has no path", loc)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", fmt.Errorf("%q contains '..'", loc)
		}
	}
	trailing := strings.HasSuffix(p, "/")
	p = path.Clean("/" + p)
	if trailing && p != "/" {
		p += "/"
	}
	host := strings.ToLower(u.Host)
	if scheme == "file" && host == "localhost" {
		host = ""
	}
	return scheme + "://" + host + p, nil
}

// allowed reports whether loc lies under one of the purge prefixes.
func (h *Handler) allowed(loc string) bool {
	n, err := normalizeLocation(loc)
	if err != nil {
		return false
	}
	for _, p := range h.prefixes {
		if strings.HasPrefix(n, p) || n+"/" == p {
			return true
		}
	}
	return false
}

// purgeCheck is the check before a purge's drop: the mode, and with
// ALLOWLIST the table location and its metadata file.
func (h *Handler) purgeCheck(name, location, metadataLoc string) *Error {
	switch h.opts.PurgeMode {
	case PurgeRefuse:
		return forbidden("purge of table %s refused: rest-catalog.purge.mode=REFUSE; drop it without purgeRequested to keep its files", name)
	case PurgeAllowlist:
		for _, l := range []string{location, metadataLoc} {
			if !h.allowed(l) {
				return forbidden("purge of table %s refused: %s is outside rest-catalog.purge.allowed-prefixes; the table and its files are untouched", name, l)
			}
		}
	}
	return nil
}

// tableFiles lists every file a table's metadata names: data and delete
// files of all manifests of all snapshots, the manifests, the manifest
// lists, statistics files, the previous metadata files and the current one.
func tableFiles(fs icemeta.FS, m *icemeta.Table, metadataLoc string) ([]string, error) {
	var files []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			files = append(files, p)
		}
	}
	for _, s := range m.Snapshots {
		manifests := s.Manifests // format v1 may list them inline
		if s.ManifestList != "" {
			var err error
			if manifests, err = icemeta.ManifestPaths(fs, s.ManifestList); err != nil {
				return nil, fmt.Errorf("snapshot %d: manifest list %s: %w", s.ID, s.ManifestList, err)
			}
		}
		for _, mf := range manifests {
			if !seen[mf] {
				data, err := icemeta.DataFilePaths(fs, mf)
				if err != nil {
					return nil, fmt.Errorf("manifest %s: %w", mf, err)
				}
				for _, d := range data {
					add(d)
				}
			}
			add(mf)
		}
		add(s.ManifestList)
	}
	for _, p := range m.StatisticsPaths() {
		add(p)
	}
	for _, p := range m.PreviousFiles() {
		add(p)
	}
	add(metadataLoc)
	return files, nil
}

// purgeFiles deletes a dropped table's files (each through the file system
// of its own location: data may live apart from metadata); with ALLOWLIST
// every path is checked again and one outside the prefixes is skipped with
// a warning. It returns how many files were deleted and skipped.
func (h *Handler) purgeFiles(ctx context.Context, name string, files []string) (deleted, skipped int, failed []string) {
	for _, f := range files {
		if h.opts.PurgeMode == PurgeAllowlist && !h.allowed(f) {
			h.log.Warn("purge skipped a file outside rest-catalog.purge.allowed-prefixes", "table", name, "file", f)
			skipped++
			continue
		}
		fs, e := h.fileIO(ctx, f)
		if e != nil {
			h.log.Warn("purge could not delete a file", "table", name, "file", f, "err", e.Message)
			failed = append(failed, f)
			continue
		}
		if err := fs.Delete(ctx, f); err != nil {
			if isNotExist(err) {
				continue
			}
			h.log.Warn("purge could not delete a file", "table", name, "file", f, "err", err)
			failed = append(failed, f)
			continue
		}
		deleted++
	}
	return deleted, skipped, failed
}

func isNotExist(err error) bool { return errors.Is(err, iofs.ErrNotExist) }

func (h *Handler) dropTable(rc *requestCtx) (int, any, *Error) {
	ref, name, e := rc.object("table")
	if e != nil {
		return 0, nil, e
	}
	purge := false
	if v := rc.r.URL.Query().Get("purgeRequested"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return 0, nil, badRequest("purgeRequested=%q: must be true or false", v)
		}
		purge = b
	}
	if e := rc.forWrite(ref); e != nil {
		return 0, nil, e
	}
	t, e := rc.icebergTable(ref, name)
	if e != nil {
		return 0, nil, e
	}
	full := ref.Name + "." + name
	loc := t.Parameters[paramMetadataLocation]
	var files []string
	fctx := rc.at(ref.Catalog)
	if purge {
		m, e := h.readTableMetadata(fctx, loc)
		if e != nil {
			return 0, nil, e
		}
		if e := h.purgeCheck(full, m.Location, loc); e != nil {
			return 0, nil, e
		}
		fs, e := h.fileIO(fctx, loc)
		if e != nil {
			return 0, nil, e
		}
		var err error
		if files, err = tableFiles(opener{fctx, fs}, m, loc); err != nil {
			return 0, nil, errorf(http.StatusServiceUnavailable, typeUnavailable, "purge of table %s: cannot list its files, nothing dropped: %v", full, err)
		}
	}
	c, e := rc.client()
	if e != nil {
		return 0, nil, e
	}
	if err := c.DropTable(rc.ctx, ref.Ext, name, false); err != nil {
		return 0, nil, metastoreError(err, "table "+full, noSuchTable(ref.Name, name))
	}
	if purge {
		deleted, skipped, failed := h.purgeFiles(fctx, full, files)
		h.log.Info("purged a dropped table's files", "table", full, "catalog", ref.Catalog, "deleted", deleted, "skipped", skipped, "failed", len(failed))
		if len(failed) > 0 {
			return 0, nil, errorf(http.StatusInternalServerError, typeInternal,
				"table %s was dropped but %d of its files could not be deleted (first: %s); see the proxy log", full, len(failed), failed[0])
		}
	}
	return http.StatusNoContent, nil, nil
}
