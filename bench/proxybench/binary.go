package proxybench

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hms-proxy/hms-proxy/bench/proc"
)

// StartBinary runs the real hms-proxy binary bin with cfg written to
// dir/hms-proxy.properties (cfg.Dir is set to dir; a zero Port or MgmtPort
// is a free one), logging to dir/hms-proxy.log, and waits until its Thrift
// port accepts. The child's Addr is that port; mgmt is the management
// HOST:PORT.
func StartBinary(name, bin, dir string, cfg ProxyConfig) (c *proc.Child, mgmt string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	for _, port := range []*int{&cfg.Port, &cfg.MgmtPort} {
		if *port == 0 {
			if *port, err = FreePort(); err != nil {
				return nil, "", err
			}
		}
	}
	cfg.Dir = dir
	file := filepath.Join(dir, "hms-proxy.properties")
	if err := os.WriteFile(file, []byte(PropsText(Props(cfg))), 0o644); err != nil {
		return nil, "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(cfg.Port)
	c, err = proc.StartWait(name, filepath.Join(dir, "hms-proxy.log"), 20*time.Second, func() error {
		cn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		return cn.Close()
	}, bin, file)
	if err != nil {
		return nil, "", err
	}
	c.Addr = addr
	return c, "127.0.0.1:" + strconv.Itoa(cfg.MgmtPort), nil
}
