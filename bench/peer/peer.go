// Package peer holds what the benchmark's peer proxies (JVM programs run
// beside hms-proxy in the same interleaved rounds: Waggle Dance, the Java
// HMS Proxy) share: their start on loopback ports with the check that they
// listen on loopback only, and a Thrift call that lists databases.
package peer

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hms-proxy/hms-proxy/bench/proc"
	"github.com/hms-proxy/hms-proxy/wire"
)

// JVM is one peer process to start.
type JVM struct {
	Name string   // process name in logs and errors; the log is Dir/Name.log
	Java string   // java binary; "" = java from PATH
	Dir  string   // working folder (configuration files, log)
	Args []string // everything after the java binary
	Env  []string // added to the environment
	Port int      // its Thrift port on 127.0.0.1
}

// Start runs the JVM, waits (up to timeout) until it answers
// get_all_databases on its Thrift port, and checks that it listens on
// loopback only; Addr of the returned child is the Thrift address.
func (j JVM) Start(timeout time.Duration) (*proc.Child, error) {
	java := j.Java
	if java == "" {
		java = "java"
	}
	cmd := exec.Command(java, j.Args...)
	cmd.Dir = j.Dir
	if len(j.Env) > 0 {
		cmd.Env = append(os.Environ(), j.Env...)
	}
	addr := "127.0.0.1:" + strconv.Itoa(j.Port)
	child, err := proc.StartCmdWait(j.Name, filepath.Join(j.Dir, j.Name+".log"), timeout,
		func() error { _, err := Databases(addr, 5*time.Second); return err }, cmd)
	if err != nil {
		return nil, err
	}
	child.Addr = addr
	if err := CheckLoopbackOnly(child.Pid()); err != nil {
		child.Stop()
		return nil, err
	}
	return child, nil
}

// Databases makes one get_all_databases call to addr and returns the names;
// an exception fails it with its message.
func Databases(addr string, timeout time.Duration) ([]string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	args := wire.Struct()
	if _, err := c.Write(wire.AppendMessage(nil, wire.Header{Name: "get_all_databases", Type: wire.Call, SeqID: 1}, &args)); err != nil {
		return nil, err
	}
	var m wire.Message
	if err := wire.NewReader(c, 16<<20).Next(&m); err != nil {
		return nil, err
	}
	if m.Type != wire.Reply {
		_, msg, _ := wire.ParseAppException(m.Body())
		return nil, fmt.Errorf("get_all_databases answered %s", msg)
	}
	v, err := wire.DecodeStruct(m.Body())
	if err != nil {
		return nil, fmt.Errorf("get_all_databases reply: %v", err)
	}
	if v.Field(0) == nil {
		return nil, fmt.Errorf("get_all_databases answered no list (exception field %v)", v)
	}
	var names []string
	for _, e := range v.Field(0).Elems {
		names = append(names, string(e.Str))
	}
	return names, nil
}

// FreePort asks the kernel for a free loopback port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// FreePorts returns n free loopback ports.
func FreePorts(n int) ([]int, error) {
	ps := make([]int, n)
	for i := range ps {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		ps[i] = p
	}
	return ps, nil
}

// Tail returns the last n lines of s (for error messages quoting a log).
func Tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
