package restcatalog

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"
)

// certReloader serves the listener's certificate and reads the files again
// when either changes (a rotated certificate takes effect on the next
// handshake, without a restart). A pair that does not load (a rotation
// half written, a key that does not match) leaves the previous one in
// service and is reported once.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger

	mu      sync.Mutex
	cur     *tls.Certificate
	stamp   [2]fileStamp // the version of the files last read
	reloads int          // successful reads after the first
}

// fileStamp tells one version of a file from another.
type fileStamp struct {
	mod  time.Time
	size int64
	ino  uint64
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	st := fileStamp{mod: fi.ModTime(), size: fi.Size()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino
	}
	return st, nil
}

// newCertReloader loads the pair once; a failure refuses the listener.
func newCertReloader(certFile, keyFile string, log *slog.Logger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, log: log}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

// load reads the pair if its files changed since the last read. A version
// that does not load is not tried again until the files change again.
func (r *certReloader) load() error {
	var st [2]fileStamp
	for i, f := range []string{r.certFile, r.keyFile} {
		s, err := stampOf(f)
		if err != nil {
			return fmt.Errorf("rest-catalog.tls: %v", err)
		}
		st[i] = s
	}
	if r.cur != nil && st == r.stamp {
		return nil
	}
	r.stamp = st
	c, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("rest-catalog.tls.cert-file=%s, rest-catalog.tls.key-file=%s: %v", r.certFile, r.keyFile, err)
	}
	if r.cur != nil {
		r.reloads++
		r.log.Info("REST listener certificate reloaded", "cert_file", r.certFile, "key_file", r.keyFile)
	}
	r.cur = &c
	return nil
}

// get is tls.Config.GetCertificate: the current pair, read again first when
// its files changed.
func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.load(); err != nil {
		r.log.Warn("REST listener certificate files changed but do not load; serving the previous certificate", "err", err)
	}
	return r.cur, nil
}
