package fileio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// s3FS is one catalog's S3 (s3:// and s3a:// locations): a client per
// bucket settings (fs.s3a.bucket.<bucket>.* may override fs.s3a.*).
type s3FS struct {
	cfg      *s3Config
	midWrite func(loc string)
	// maxObjects bounds one RemoveTree.
	maxObjects int

	mu      sync.Mutex
	clients map[string]*minio.Client // by bucket
}

// deleteBatch is the most keys one DeleteObjects request carries (S3's
// limit).
const deleteBatch = 1000

// DefaultMaxTreeObjects bounds the objects one S3 RemoveTree deletes.
const DefaultMaxTreeObjects = 100000

func (f *s3FS) client(bucket string) (*minio.Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.clients[bucket]; ok {
		return c, nil
	}
	b := f.cfg.bucket(bucket)
	var creds *credentials.Credentials
	switch {
	case b.accessKey != "":
		creds = credentials.NewStaticV4(b.accessKey, b.secretKey, b.sessionToken)
	default:
		creds = credentials.NewEnvAWS()
	}
	lookup := minio.BucketLookupDNS
	if b.pathStyle {
		lookup = minio.BucketLookupPath
	}
	c, err := minio.New(b.host, &minio.Options{Creds: creds, Secure: b.secure, Region: b.region, BucketLookup: lookup})
	if err != nil {
		return nil, fmt.Errorf("S3 client for bucket %s: %v", bucket, err) // names no credential
	}
	f.clients[bucket] = c
	return c, nil
}

// s3Object splits an s3:// or s3a:// location into bucket and key.
func s3Object(loc string) (bucket, key string, err error) {
	u, p, err := parseLoc(loc)
	if err != nil {
		return "", "", err
	}
	switch strings.ToLower(u.Scheme) {
	case "s3", "s3a":
	default:
		return "", "", fmt.Errorf("location %s is not an s3:// or s3a:// URI", loc)
	}
	if u.Host == "" {
		return "", "", fmt.Errorf("location %s names no bucket", loc)
	}
	return u.Host, strings.TrimPrefix(p, "/"), nil
}

func (f *s3FS) object(loc string) (*minio.Client, string, string, error) {
	bucket, key, err := s3Object(loc)
	if err != nil {
		return nil, "", "", err
	}
	c, err := f.client(bucket)
	return c, bucket, key, err
}

// s3Err gives S3's error codes this package's meaning.
func s3Err(op, loc string, err error) error {
	if err == nil {
		return nil
	}
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.Code == "NoSuchKey" || resp.Code == "NoSuchBucket" || resp.StatusCode == http.StatusNotFound:
		return &PathError{Op: op, Loc: loc, Err: fmt.Errorf("%w (%v)", ErrNotExist, err)}
	case resp.Code == "PreconditionFailed" || resp.StatusCode == http.StatusPreconditionFailed:
		return &PathError{Op: op, Loc: loc, Err: fmt.Errorf("%w (%v)", ErrExist, err)}
	}
	return &PathError{Op: op, Loc: loc, Err: err}
}

// Open implements IO.
func (f *s3FS) Open(ctx context.Context, loc string) (io.ReadCloser, error) {
	c, bucket, key, err := f.object(loc)
	if err != nil {
		return nil, err
	}
	obj, err := c.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, s3Err("open", loc, err)
	}
	if _, err := obj.Stat(); err != nil { // the request goes out here
		obj.Close()
		return nil, s3Err("open", loc, err)
	}
	return obj, nil
}

// Create implements IO: one PUT of the whole object (S3 makes an object
// visible only once its PUT completed), with If-None-Match: * so that an
// existing object is never replaced where the server supports conditional
// writes.
func (f *s3FS) Create(ctx context.Context, loc string, data []byte) error {
	c, bucket, key, err := f.object(loc)
	if err != nil {
		return err
	}
	// Servers without conditional writes ignore If-None-Match (s3proxy
	// 2.6.0 does): the existence check first keeps an existing object
	// unreplaced there too, up to a race the unique metadata file names
	// make moot.
	if _, err := c.StatObject(ctx, bucket, key, minio.StatObjectOptions{}); err == nil {
		return &PathError{Op: "create", Loc: loc, Err: ErrExist}
	} else if e := s3Err("create", loc, err); !errors.Is(e, ErrNotExist) {
		return e
	}
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream"}
	opts.SetMatchETagExcept("*")
	var body io.Reader = bytes.NewReader(data)
	if f.midWrite != nil {
		body = &midReader{data: data, hook: func() { f.midWrite(loc) }}
	}
	core := minio.Core{Client: c}
	_, err = core.PutObject(ctx, bucket, key, body, int64(len(data)), "", "", opts)
	return s3Err("create", loc, err)
}

// midReader calls hook once half of data has been read (fault injection).
type midReader struct {
	data []byte
	off  int
	hook func()
	done bool
}

func (r *midReader) Read(b []byte) (int, error) {
	half := len(r.data) / 2
	if !r.done && r.off >= half {
		r.done = true
		r.hook()
	}
	if r.off >= len(r.data) {
		return 0, io.EOF
	}
	end := len(r.data)
	if !r.done {
		end = half
	}
	n := copy(b, r.data[r.off:end])
	r.off += n
	return n, nil
}

// Delete implements IO (S3 deletes are idempotent: a missing object is no
// error).
func (f *s3FS) Delete(ctx context.Context, loc string) error {
	c, bucket, key, err := f.object(loc)
	if err != nil {
		return err
	}
	return s3Err("delete", loc, c.RemoveObject(ctx, bucket, key, minio.RemoveObjectOptions{}))
}

// List implements IO: the objects whose keys start with dir/, without
// folder markers (keys ending in /).
func (f *s3FS) List(ctx context.Context, dir string, fn func(File) error) error {
	c, bucket, key, err := f.object(dir)
	if err != nil {
		return err
	}
	prefix := strings.TrimSuffix(key, "/") + "/"
	scheme, _ := Scheme(dir)
	for obj := range c.ListObjectsIter(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			return s3Err("list", dir, obj.Err)
		}
		if strings.HasSuffix(obj.Key, "/") {
			continue
		}
		if err := fn(File{Location: scheme + "://" + bucket + "/" + obj.Key, Size: obj.Size}); err != nil {
			return err
		}
	}
	return nil
}

// RemoveTree implements IO: the objects under dir/ are listed and deleted
// in DeleteObjects batches of at most 1000 keys, at most maxObjects in all
// (more is an error: nothing beyond the bound is touched).
func (f *s3FS) RemoveTree(ctx context.Context, root, dir string) (int, error) {
	rb, rk, err := s3Object(root)
	if err != nil {
		return 0, err
	}
	c, bucket, key, err := f.object(dir)
	if err != nil {
		return 0, err
	}
	if rb != bucket || !under("/"+key, "/"+rk) {
		return 0, fmt.Errorf("%s is not below %s", dir, root)
	}
	prefix := strings.TrimSuffix(key, "/") + "/"
	deleted := 0
	listed := 0
	var batch []minio.ObjectInfo
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		ch := make(chan minio.ObjectInfo, len(batch))
		for _, o := range batch {
			ch <- o
		}
		close(ch)
		var errs []error
		for res := range c.RemoveObjectsWithResult(ctx, bucket, ch, minio.RemoveObjectsOptions{}) {
			if res.Err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", res.ObjectName, res.Err))
				continue
			}
			if !strings.HasSuffix(res.ObjectName, "/") {
				deleted++
			}
		}
		batch = batch[:0]
		if len(errs) > 0 {
			return fmt.Errorf("%d of the objects could not be deleted: %w", len(errs), errors.Join(errs...))
		}
		return nil
	}
	for obj := range c.ListObjectsIter(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			return deleted, s3Err("list", dir, obj.Err)
		}
		listed++
		if listed > f.maxObjects {
			return deleted, fmt.Errorf("%s holds more than %d objects; stopped after deleting %d (the bound of one purge)", dir, f.maxObjects, deleted)
		}
		batch = append(batch, minio.ObjectInfo{Key: obj.Key})
		if len(batch) == deleteBatch {
			if err := flush(); err != nil {
				return deleted, err
			}
		}
	}
	if err := flush(); err != nil {
		return deleted, err
	}
	// A folder marker object named like the directory itself (dir/ is
	// listed above).
	if err := c.RemoveObject(ctx, bucket, strings.TrimSuffix(key, "/"), minio.RemoveObjectOptions{}); err != nil &&
		!errors.Is(s3Err("delete", dir, err), ErrNotExist) {
		return deleted, s3Err("delete", dir, err)
	}
	if listed == 0 {
		return 0, &PathError{Op: "remove", Loc: dir, Err: fmt.Errorf("%w: no object under %s", ErrNotExist, prefix)}
	}
	return deleted, nil
}
