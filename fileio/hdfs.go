package fileio

import (
	"container/list"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"reflect"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/colinmarc/hdfs/v2"
	"github.com/colinmarc/hdfs/v2/hadoopconf"
	krbclient "github.com/jcmturner/gokrb5/v8/client"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// hdfsFS is one catalog's HDFS: a client per (name service or NameNode,
// user), opened on first use and kept (at most maxClients, the least
// recently used closed first).
type hdfsFS struct {
	cfg *hdfsConfig
	// kerberos returns the logged-in client of the proxy's principal; nil
	// without Kerberos.
	kerberos func() (*krbclient.Client, error)
	// impersonate: writes run as the context's user (WithUser).
	impersonate bool
	// midWrite, when set, runs halfway through a Create (fault injection
	// for tests).
	midWrite func(loc string)
	log      func(msg string, args ...any)

	mu      sync.Mutex
	clients map[clientKey]*list.Element // of *hdfsClient
	lru     *list.List
	closed  bool
}

const maxClients = 64

// ioTimeout bounds one read or write on a NameNode or DataNode connection:
// a server that stops answering fails the call instead of hanging it.
const ioTimeout = 2 * time.Minute

type clientKey struct{ authority, user string }

type hdfsClient struct {
	key clientKey
	c   *hdfs.Client
}

// hdfsConfig is what a catalog's conf says about HDFS.
type hdfsConfig struct {
	defaultAuthority string              // of fs.defaultFS
	nameservices     map[string][]string // dfs.nameservices → NameNode RPC addresses
	kerberos         bool                // hadoop.security.authentication=kerberos
	spn              string              // dfs.namenode.kerberos.principal without the realm
	conf             hadoopconf.HadoopConf
	user             string // the proxy's user without Kerberos
}

// addresses returns the NameNode RPC addresses of a location's authority.
func (c *hdfsConfig) addresses(authority string) ([]string, error) {
	if authority == "" {
		if c.defaultAuthority == "" {
			return nil, errors.New("the location names no NameNode and fs.defaultFS is not an hdfs:// URI")
		}
		authority = c.defaultAuthority
	}
	if a, ok := c.nameservices[strings.ToLower(authority)]; ok {
		return a, nil
	}
	if _, _, err := net.SplitHostPort(authority); err != nil {
		return []string{net.JoinHostPort(authority, "8020")}, nil
	}
	return []string{authority}, nil
}

// client returns the client for a location's authority and the user.
func (f *hdfsFS) client(ctx context.Context, authority string) (*hdfsClient, error) {
	user := ""
	if f.impersonate {
		user = UserFrom(ctx)
	}
	if authority == "" {
		authority = f.cfg.defaultAuthority
	}
	key := clientKey{strings.ToLower(authority), user}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, errors.New("fileio: closed")
	}
	if e, ok := f.clients[key]; ok {
		f.lru.MoveToFront(e)
		f.mu.Unlock()
		return e.Value.(*hdfsClient), nil
	}
	f.mu.Unlock()

	c, err := f.dial(key)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.clients[key]; ok { // another call won the race
		_ = c.Close()
		f.lru.MoveToFront(e)
		return e.Value.(*hdfsClient), nil
	}
	hc := &hdfsClient{key: key, c: c}
	f.clients[key] = f.lru.PushFront(hc)
	for f.lru.Len() > maxClients {
		old := f.lru.Remove(f.lru.Back()).(*hdfsClient)
		delete(f.clients, old.key)
		_ = old.c.Close()
	}
	return hc, nil
}

// drop closes a client whose connection failed, so the next call dials
// anew (the library waits five seconds before it retries a NameNode it
// marked failed).
func (f *hdfsFS) drop(hc *hdfsClient) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.clients[hc.key]; ok && e.Value == hc {
		f.lru.Remove(e)
		delete(f.clients, hc.key)
		_ = hc.c.Close()
	}
}

func (f *hdfsFS) dial(key clientKey) (*hdfs.Client, error) {
	addrs, err := f.cfg.addresses(key.authority)
	if err != nil {
		return nil, err
	}
	o := hdfs.ClientOptionsFromConf(f.cfg.conf)
	o.Addresses = addrs
	o.KerberosClient = nil
	base := &net.Dialer{Timeout: 20 * time.Second, KeepAlive: 30 * time.Second}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := base.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &timeoutConn{Conn: c}, nil
	}
	o.DatanodeDialFunc = dial
	o.NamenodeDialFunc = dial
	real := f.cfg.user
	if f.cfg.kerberos {
		kc, err := f.kerberos()
		if err != nil {
			return nil, err
		}
		o.KerberosClient = kc
		o.KerberosServicePrincipleName = f.cfg.spn
		real = kc.Credentials.UserName()
	} else {
		o.User = real
	}
	if key.user != "" && key.user != ShortName(real) {
		// The NameNode runs the calls as key.user, checking that the
		// proxy's principal may impersonate it (hadoop.proxyuser.*).
		proxied := key.user
		realUser := ""
		if !f.cfg.kerberos {
			realUser = real // without Kerberos the connection states both
		}
		o.NamenodeDialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return newProxyUserConn(c, proxied, realUser), nil
		}
	}
	c, err := hdfs.NewClient(o)
	if err != nil {
		return nil, fmt.Errorf("HDFS %s (NameNodes %s): %w", key.authority, strings.Join(addrs, ","), err)
	}
	return c, nil
}

func (f *hdfsFS) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for _, e := range f.clients {
		_ = e.Value.(*hdfsClient).c.Close()
	}
	f.clients = map[clientKey]*list.Element{}
	f.lru.Init()
}

// hdfsPath splits an hdfs:// location.
func hdfsPath(loc string) (authority, p string, err error) {
	u, p, err := parseLoc(loc)
	if err != nil {
		return "", "", err
	}
	if !strings.EqualFold(u.Scheme, "hdfs") {
		return "", "", fmt.Errorf("location %s is not an hdfs:// URI", loc)
	}
	return u.Host, p, nil
}

// call runs op with the location's client. A connection failure drops the
// client (a NameNode that restarted, or failed over); the call is made once
// more with a new client unless op says it got too far (errNoRetry).
func (f *hdfsFS) call(ctx context.Context, loc string, op func(c *hdfs.Client, p string) error) error {
	authority, p, err := hdfsPath(loc)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		hc, err := f.client(ctx, authority)
		if err != nil {
			return err
		}
		err = op(hc.c, p)
		if !isConnError(err) {
			return err
		}
		f.drop(hc)
		var nr *noRetry
		if attempt > 0 || errors.As(err, &nr) || ctx.Err() != nil {
			return err
		}
	}
}

// noRetry marks an error after which an operation must not be repeated.
type noRetry struct{ err error }

func (e *noRetry) Error() string { return e.err.Error() }
func (e *noRetry) Unwrap() error { return e.err }

func isConnError(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	var he hdfs.Error
	if errors.As(err, &he) {
		return false // the NameNode answered
	}
	s := err.Error()
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(s, "no available namenodes") || strings.Contains(s, "connection reset") ||
		strings.Contains(s, "broken pipe") || strings.Contains(s, "connection refused")
}

// Open implements IO.
func (f *hdfsFS) Open(ctx context.Context, loc string) (io.ReadCloser, error) {
	var r io.ReadCloser
	err := f.call(ctx, loc, func(c *hdfs.Client, p string) error {
		fr, err := c.Open(p)
		if err != nil {
			return hdfsErr("open", loc, err)
		}
		r = fr
		return nil
	})
	return r, err
}

// Create implements IO: the data goes to a hidden temporary name in the
// same folder, and a rename that never replaces an existing file gives it
// its name. A failed write leaves no file under the name; a temporary file
// the failure leaves behind (the NameNode gone mid-write) is removed when
// possible and reported when not.
func (f *hdfsFS) Create(ctx context.Context, loc string, data []byte) error {
	return f.call(ctx, loc, func(c *hdfs.Client, p string) error {
		dir := path.Dir(p)
		if err := c.MkdirAll(dir, 0o755); err != nil {
			return hdfsErr("mkdir", dir, err)
		}
		var b [8]byte
		_, _ = rand.Read(b[:])
		tmp := path.Join(dir, "."+path.Base(p)+".tmp-"+hex.EncodeToString(b[:]))
		w, err := c.Create(tmp)
		if err != nil {
			return hdfsErr("create", tmp, err)
		}
		// From here on the temporary file exists: a failure is not retried
		// (the caller decides), the file is removed or reported.
		_ = w.SetDeadline(time.Now().Add(ioTimeout))
		half := len(data) / 2
		_, err = w.Write(data[:half])
		if err == nil && f.midWrite != nil {
			f.midWrite(loc)
		}
		if err == nil {
			_, err = w.Write(data[half:])
		}
		if err == nil {
			err = closeWriter(ctx, w)
		} else {
			_ = w.Close()
		}
		if err == nil {
			err = renameNoReplace(c, tmp, p)
			if errors.Is(err, ErrExist) {
				f.removeTemp(c, tmpLoc(loc, tmp), tmp)
				return &PathError{Op: "create", Loc: loc, Err: ErrExist}
			}
		}
		if err != nil {
			f.removeTemp(c, tmpLoc(loc, tmp), tmp)
			return &noRetry{hdfsErr("write", loc, err)}
		}
		return nil
	})
}

// closeWriter completes a file. The NameNode answers "not yet" while the
// DataNode has not reported the last block: the call is repeated with a
// growing pause, as Hadoop's own client does, within ctx and at most a
// minute.
func closeWriter(ctx context.Context, w *hdfs.FileWriter) error {
	pause := 100 * time.Millisecond
	deadline := time.Now().Add(time.Minute)
	for {
		err := w.Close()
		if !hdfs.IsErrReplicating(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (waiting for the NameNode to complete the file)", ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// removeTemp deletes a temporary file; a failure is reported in the log
// with the file's location (an orphan an operator can delete).
func (f *hdfsFS) removeTemp(c *hdfs.Client, loc, tmp string) {
	if err := c.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		f.log("an interrupted HDFS write left a temporary file that could not be removed; delete it", "file", loc, "err", err.Error())
	}
}

// tmpLoc is the location of a temporary file next to loc.
func tmpLoc(loc, tmp string) string {
	return strings.TrimSuffix(loc, path.Base(loc)) + path.Base(tmp)
}

// Delete implements IO.
func (f *hdfsFS) Delete(ctx context.Context, loc string) error {
	return f.call(ctx, loc, func(c *hdfs.Client, p string) error {
		return hdfsErr("delete", loc, c.Remove(p))
	})
}

// List implements IO.
func (f *hdfsFS) List(ctx context.Context, dir string, fn func(File) error) error {
	authority, _, err := hdfsPath(dir)
	if err != nil {
		return err
	}
	return f.call(ctx, dir, func(c *hdfs.Client, p string) error {
		err := c.Walk(p, func(q string, info os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			if info.IsDir() {
				return nil
			}
			return fn(File{Location: "hdfs://" + authority + q, Size: info.Size()})
		})
		return hdfsErr("list", dir, err)
	})
}

// RemoveTree implements IO: one recursive delete at the NameNode.
func (f *hdfsFS) RemoveTree(ctx context.Context, root, dir string) (int, error) {
	ra, rp, err := hdfsPath(root)
	if err != nil {
		return 0, err
	}
	da, dp, err := hdfsPath(dir)
	if err != nil {
		return 0, err
	}
	if !strings.EqualFold(ra, da) || !under(dp, rp) {
		return 0, fmt.Errorf("%s is not below %s", dir, root)
	}
	n := -1
	err = f.call(ctx, dir, func(c *hdfs.Client, p string) error {
		if _, err := c.Stat(p); err != nil {
			return hdfsErr("stat", dir, err)
		}
		if cs, err := c.GetContentSummary(p); err == nil {
			n = int(cs.FileCount())
		}
		return hdfsErr("delete", dir, c.RemoveAll(p))
	})
	return n, err
}

// hdfsErr gives the library's errors this package's meaning.
func hdfsErr(op, loc string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, os.ErrNotExist):
		return &PathError{Op: op, Loc: loc, Err: fmt.Errorf("%w (%v)", ErrNotExist, err)}
	case errors.Is(err, os.ErrExist):
		return &PathError{Op: op, Loc: loc, Err: fmt.Errorf("%w (%v)", ErrExist, err)}
	}
	return err
}

// renameNoReplace renames src to dst unless dst exists (the NameNode's
// rename2 with overwriteDest=false: it fails with
// FileAlreadyExistsException). The library's Rename always replaces, so
// the call goes through its NameNode connection directly, with the
// request type the library registers with protobuf.
func renameNoReplace(c *hdfs.Client, src, dst string) error {
	exec, err := namenodeExecute(c)
	if err != nil {
		return err
	}
	req, err := newMessage("hadoop.hdfs.Rename2RequestProto")
	if err != nil {
		return err
	}
	resp, err := newMessage("hadoop.hdfs.Rename2ResponseProto")
	if err != nil {
		return err
	}
	fields := req.ProtoReflect().Descriptor().Fields()
	req.ProtoReflect().Set(fields.ByName("src"), protoreflect.ValueOfString(src))
	req.ProtoReflect().Set(fields.ByName("dst"), protoreflect.ValueOfString(dst))
	req.ProtoReflect().Set(fields.ByName("overwriteDest"), protoreflect.ValueOfBool(false))
	err = exec("rename2", req, resp)
	var he hdfs.Error
	if errors.As(err, &he) && strings.HasSuffix(he.Exception(), "FileAlreadyExistsException") {
		return &PathError{Op: "rename", Loc: dst, Err: ErrExist}
	}
	if err != nil {
		return fmt.Errorf("rename %s to %s: %w", src, dst, err)
	}
	return nil
}

func newMessage(name protoreflect.FullName) (proto.Message, error) {
	mt, err := protoregistry.GlobalTypes.FindMessageByName(name)
	if err != nil {
		return nil, fmt.Errorf("fileio: the HDFS client has no message %s (library version changed?): %w", name, err)
	}
	return mt.New().Interface(), nil
}

// namenodeExecute returns the Execute method of a client's NameNode
// connection (an unexported field of github.com/colinmarc/hdfs/v2 v2.4.0;
// TestRenameNoReplace fails if an upgrade moves it).
func namenodeExecute(c *hdfs.Client) (func(method string, req, resp proto.Message) error, error) {
	v := reflect.ValueOf(c).Elem().FieldByName("namenode")
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() {
		return nil, errors.New("fileio: the HDFS client has no NameNode connection field (library version changed?)")
	}
	v = reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
	m := v.MethodByName("Execute")
	if !m.IsValid() {
		return nil, errors.New("fileio: the HDFS NameNode connection has no Execute method (library version changed?)")
	}
	exec, ok := m.Interface().(func(string, proto.Message, proto.Message) error)
	if !ok {
		return nil, fmt.Errorf("fileio: the HDFS NameNode connection's Execute is %s (library version changed?)", m.Type())
	}
	return exec, nil
}

// timeoutConn bounds every read and write.
type timeoutConn struct{ net.Conn }

func (c *timeoutConn) Read(b []byte) (int, error) {
	_ = c.Conn.SetReadDeadline(time.Now().Add(ioTimeout))
	return c.Conn.Read(b)
}

func (c *timeoutConn) Write(b []byte) (int, error) {
	_ = c.Conn.SetWriteDeadline(time.Now().Add(ioTimeout))
	return c.Conn.Write(b)
}
