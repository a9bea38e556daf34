package restcatalog

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/hms-proxy/hms-proxy/fileio"
	"github.com/hms-proxy/hms-proxy/restcatalog/icemeta"
)

// maxMetadataBytes bounds a metadata file read (a metadata.json of a table
// with a long history is megabytes, not gigabytes).
const maxMetadataBytes = 256 << 20

func ioError(op, loc string, err error) *Error {
	return errorf(http.StatusServiceUnavailable, typeUnavailable, "cannot %s %s: %v", op, loc, err)
}

// catalogKey carries the catalog whose storage settings serve a file
// access (its conf.* keys: fs.defaultFS, fs.s3a.*, ...).
type catalogKey struct{}

// at is the request's context for file access in a catalog: the catalog's
// storage settings, and the caller as the user of HDFS writes where the
// catalog impersonates.
func (rc *requestCtx) at(catalog string) context.Context {
	return fileScope(rc.ctx, catalog, rc.caller)
}

func fileScope(ctx context.Context, catalog string, c Caller) context.Context {
	return fileio.WithUser(context.WithValue(ctx, catalogKey{}, catalog), fileio.ShortName(c.User))
}

// fileIO opens the file system of a location, for the catalog of ctx (at).
func (h *Handler) fileIO(ctx context.Context, loc string) (fileio.IO, *Error) {
	catalog, _ := ctx.Value(catalogKey{}).(string)
	fs, err := h.opts.FileIO(ctx, catalog, loc)
	if err != nil {
		return nil, errorf(http.StatusNotAcceptable, typeUnsupported, "this proxy has no file system for %s: %v", loc, err)
	}
	return fs, nil
}

// opener reads files through fs for icemeta (manifest lists, manifests).
type opener struct {
	ctx context.Context
	fs  fileio.IO
}

func (o opener) Open(loc string) (io.ReadCloser, error) { return o.fs.Open(o.ctx, loc) }

// readFile reads a whole metadata file, decompressing gzip and zstd (by
// content, so a renamed file still reads).
func (h *Handler) readFile(ctx context.Context, loc string) ([]byte, *Error) {
	fs, e := h.fileIO(ctx, loc)
	if e != nil {
		return nil, e
	}
	f, err := fs.Open(ctx, loc)
	if err != nil {
		return nil, ioError("open metadata file", loc, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxMetadataBytes+1))
	if err != nil {
		return nil, ioError("read metadata file", loc, err)
	}
	if len(b) > maxMetadataBytes {
		return nil, errorf(http.StatusInternalServerError, typeInternal, "metadata file %s exceeds %d bytes", loc, maxMetadataBytes)
	}
	switch {
	case len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b:
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, ioError("decompress metadata file", loc, err)
		}
		if b, err = io.ReadAll(io.LimitReader(zr, maxMetadataBytes)); err != nil {
			return nil, ioError("decompress metadata file", loc, err)
		}
	case len(b) > 4 && bytes.Equal(b[:4], []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := zstd.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, ioError("decompress metadata file", loc, err)
		}
		defer zr.Close()
		if b, err = io.ReadAll(io.LimitReader(zr, maxMetadataBytes)); err != nil {
			return nil, ioError("decompress metadata file", loc, err)
		}
	}
	return b, nil
}

func (h *Handler) readTableMetadata(ctx context.Context, loc string) (*icemeta.Table, *Error) {
	b, e := h.readFile(ctx, loc)
	if e != nil {
		return nil, e
	}
	m, err := icemeta.ParseTable(b)
	if err != nil {
		return nil, errorf(http.StatusInternalServerError, typeInternal, "table metadata file %s does not parse: %v", loc, err)
	}
	return m, nil
}

func (h *Handler) readViewMetadata(ctx context.Context, loc string) (*icemeta.View, *Error) {
	b, e := h.readFile(ctx, loc)
	if e != nil {
		return nil, e
	}
	m, err := icemeta.ParseView(b)
	if err != nil {
		return nil, errorf(http.StatusInternalServerError, typeInternal, "view metadata file %s does not parse: %v", loc, err)
	}
	return m, nil
}

// writeFile writes a new metadata file (JSON, compressed as codec says).
func (h *Handler) writeFile(ctx context.Context, loc string, v any, codec string) *Error {
	b, err := json.Marshal(v)
	if err != nil {
		return errorf(http.StatusInternalServerError, typeInternal, "cannot encode metadata for %s: %v", loc, err)
	}
	switch codec {
	case "gzip":
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(b); err != nil {
			return ioError("compress", loc, err)
		}
		if err := zw.Close(); err != nil {
			return ioError("compress", loc, err)
		}
		b = buf.Bytes()
	case "zstd":
		zw, err := zstd.NewWriter(nil)
		if err != nil {
			return ioError("compress", loc, err)
		}
		b = zw.EncodeAll(b, nil)
		_ = zw.Close()
	}
	fs, e := h.fileIO(ctx, loc)
	if e != nil {
		return e
	}
	if err := fs.Create(ctx, loc, b); err != nil {
		if errors.Is(err, fileio.ErrExist) {
			// Another writer's file: never touched.
			return commitFailed("metadata file %s already exists; nothing was committed", loc)
		}
		// A write that failed may still have landed whole (an S3 PUT
		// whose answer was lost): it is removed, or reported when it
		// cannot be.
		h.removeFile(ctx, loc)
		return ioError("write metadata file", loc, err)
	}
	return nil
}

// removeFile deletes a metadata file the commit did not publish; a file
// that cannot be deleted is reported in the log by name (an orphan an
// operator may delete). It runs on a context of its own: the request's
// may be done.
func (h *Handler) removeFile(ctx context.Context, loc string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	fs, e := h.fileIO(ctx, loc)
	if e != nil {
		h.log.Warn("an unpublished metadata file may remain (orphan): cannot open its file system", "file", loc, "err", e.Message)
		return
	}
	if err := fs.Delete(ctx, loc); err != nil && !fileio.IsNotExist(err) {
		h.log.Warn("an unpublished metadata file may remain (orphan): cannot delete it", "file", loc, "err", err)
	}
}

// metadataVersion parses the version of a metadata file name
// ("00012-<uuid>.metadata.json" is 12); -1 when the name has none.
func metadataVersion(loc string) int {
	name := path.Base(loc)
	i := strings.IndexByte(name, '-')
	if i <= 0 {
		return -1
	}
	v, err := strconv.Atoi(name[:i])
	if err != nil || v < 0 {
		return -1
	}
	return v
}

// newTableMetadataLocation names the next metadata file of a table, as
// Iceberg does: <metadata dir>/<%05d version>-<uuid>[.gz].metadata.json.
func newTableMetadataLocation(m *icemeta.Table, prev string) (string, string, *Error) {
	codec, err := m.Codec()
	if err != nil {
		return "", "", badRequest("%v", err)
	}
	loc, err := m.NewMetadataLocation(metadataVersion(prev) + 1)
	if err != nil {
		return "", "", badRequest("%v", err)
	}
	return loc, codec, nil
}

// newViewMetadataLocation names the next metadata file of a view.
func newViewMetadataLocation(m *icemeta.View, prev string) string {
	return m.NewMetadataLocation(metadataVersion(prev) + 1)
}
