package peer

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Listener is one listening TCP socket of a process.
type Listener struct {
	Addr  netip.AddrPort
	Inode string
}

// Listeners returns the listening TCP sockets (IPv4 and IPv6) that process
// pid holds, from /proc/<pid>/fd and /proc/<pid>/net/tcp{,6}.
func Listeners(pid int) ([]Listener, error) {
	base := filepath.Join("/proc", strconv.Itoa(pid))
	fds, err := os.ReadDir(filepath.Join(base, "fd"))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(base, "fd", fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if in, ok := strings.CutPrefix(target, "socket:["); ok {
			inodes[strings.TrimSuffix(in, "]")] = true
		}
	}
	var out []Listener
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(filepath.Join(base, "net", table))
		if err != nil {
			return nil, err
		}
		ls, err := parseTCPTable(string(b))
		if err != nil {
			return nil, fmt.Errorf("/proc/%d/net/%s: %v", pid, table, err)
		}
		for _, l := range ls {
			if inodes[l.Inode] {
				out = append(out, l)
			}
		}
	}
	return out, nil
}

// parseTCPTable returns the LISTEN (state 0A) rows of a /proc/net/tcp or
// tcp6 table.
func parseTCPTable(s string) ([]Listener, error) {
	var out []Listener
	for i, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 10 || f[3] != "0A" {
			continue
		}
		host, port, ok := strings.Cut(f[1], ":")
		if !ok {
			return nil, fmt.Errorf("line %d: local address %q", i+1, f[1])
		}
		raw, err := hex.DecodeString(host)
		if err != nil || len(raw) != 4 && len(raw) != 16 {
			return nil, fmt.Errorf("line %d: local address %q", i+1, f[1])
		}
		// The kernel prints each 32-bit word of the address in host order.
		for w := 0; w < len(raw); w += 4 {
			v := binary.NativeEndian.Uint32(raw[w:])
			binary.BigEndian.PutUint32(raw[w:], v)
		}
		p, err := strconv.ParseUint(port, 16, 16)
		if err != nil {
			return nil, fmt.Errorf("line %d: port %q", i+1, port)
		}
		a, _ := netip.AddrFromSlice(raw)
		out = append(out, Listener{Addr: netip.AddrPortFrom(a, uint16(p)), Inode: f[9]})
	}
	return out, nil
}

// CheckLoopbackOnly fails when process pid listens on any address outside
// loopback (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104), naming each one.
func CheckLoopbackOnly(pid int) error {
	ls, err := Listeners(pid)
	if err != nil {
		return fmt.Errorf("reading the listening sockets of process %d: %w", pid, err)
	}
	var bad []string
	for _, l := range ls {
		if !l.Addr.Addr().Unmap().IsLoopback() {
			bad = append(bad, l.Addr.String())
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("process %d listens outside loopback on %s", pid, strings.Join(bad, ", "))
	}
	return nil
}
