// The ZOOKEEPER store's connection: connect strings, the session, errors
// and retries.

package locks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// plainDial is go-zookeeper's own default dialer.
func plainDial(network, address string, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout(network, address, timeout)
}

// parseConnectString splits host:port,...[/chroot].
func parseConnectString(s string) ([]string, string, error) {
	const key = "synthetic-read-lock.store.zookeeper.connect-string"
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, "", fmt.Errorf("locks: %s is empty: name the ZooKeeper servers as host:port[,host:port...][/chroot]", key)
	}
	hosts, chroot := s, ""
	if i := strings.Index(s, "/"); i >= 0 {
		hosts, chroot = s[:i], s[i:]
		if strings.ContainsAny(chroot, ",:") {
			return nil, "", fmt.Errorf("locks: %s %q: the chroot %q holds a server list; the chroot goes once, after the last server", key, s, chroot)
		}
		if chroot == "/" {
			chroot = ""
		} else if err := checkZnode(key+" chroot", chroot); err != nil {
			return nil, "", err
		}
	}
	var servers []string
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		host, port, err := net.SplitHostPort(h)
		if err != nil || host == "" {
			return nil, "", fmt.Errorf("locks: %s %q: server %q is not host:port", key, s, h)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, "", fmt.Errorf("locks: %s %q: server %q has no valid port", key, s, h)
		}
		servers = append(servers, h)
	}
	return servers, chroot, nil
}

func checkZnode(key, p string) error {
	if !strings.HasPrefix(p, "/") || p == "/" || strings.HasSuffix(p, "/") || strings.Contains(p, "//") ||
		path.Clean(p) != p {
		return fmt.Errorf("locks: %s %q: want an absolute znode path such as %s (no trailing slash, no empty or relative parts)", key, p, DefaultZnode)
	}
	return nil
}

// zkLogger sends the client library's messages to slog at debug level.
type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug("synthetic lock store: zookeeper client: " + fmt.Sprintf(format, args...))
}

// fail wraps a ZooKeeper failure into a *StoreError naming the store.
func (z *ZooKeeperStore) fail(op string, err error) error {
	var se *StoreError
	if errors.As(err, &se) {
		return err
	}
	if z.opts.AuthError != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNodeExists) {
		if aerr := z.opts.AuthError(); aerr != nil {
			err = fmt.Errorf("%w (last ZooKeeper SASL attempt: %v)", err, aerr)
		}
	}
	return &StoreError{Store: z.Describe(), Op: op, Exception: zkException(err), Err: err}
}

// zkException gives the ZooKeeper (KeeperException) name of a failure, the
// vocabulary of ZooKeeper's own logs and of the Java proxy's metric.
func zkException(err error) string {
	switch {
	case errors.Is(err, zk.ErrNoServer), errors.Is(err, zk.ErrConnectionClosed):
		return "ConnectionLossException"
	case errors.Is(err, zk.ErrSessionExpired):
		return "SessionExpiredException"
	case errors.Is(err, errTimeout), errors.Is(err, context.DeadlineExceeded):
		return "OperationTimeoutException"
	case errors.Is(err, zk.ErrNoAuth), errors.Is(err, zk.ErrAuthFailed):
		return "NoAuthException"
	case errors.Is(err, zk.ErrClosing):
		return "SessionClosedException"
	case errors.Is(err, context.Canceled):
		return "InterruptedException"
	case errors.Is(err, errCorrupt):
		return "DataInconsistencyException"
	}
	return "KeeperException"
}

var errCorrupt = errors.New("unexpected znode layout")

// retryable: the request was never sent (always safe to repeat), or the
// operation is idempotent and the connection was lost under it.
func retryable(err error, idempotent bool) bool {
	if errors.Is(err, zk.ErrNoServer) {
		return true
	}
	if !idempotent {
		return false
	}
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, errTimeout)
}

// call runs one ZooKeeper operation with the connection timeout, retrying
// connection failures up to MaxRetries times with doubling pauses from
// BaseSleep. f gets the attempt number (0 first).
func (z *ZooKeeperStore) call(ctx context.Context, idempotent bool, f func(attempt int) error) error {
	for attempt := 0; ; attempt++ {
		err := z.once(ctx, func() error { return f(attempt) })
		if err == nil || !retryable(err, idempotent) || attempt >= z.opts.MaxRetries {
			return err
		}
		pause := z.opts.BaseSleep << min(attempt, 10)
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-z.closed:
			t.Stop()
			return zk.ErrClosing
		}
	}
}

// once runs f and waits for it at most the connection timeout (or ctx). A call
// given up on still finishes in the background: the client library bounds it
// by the session's receive timeout.
func (z *ZooKeeperStore) once(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	t := time.NewTimer(z.opts.ConnectionTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("%w within %v (connection-timeout-ms)", errTimeout, z.opts.ConnectionTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}
