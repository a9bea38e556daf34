package testbed

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// launches counts the processes the test bed started in this process, by what they are: the metastores, the other
// servers (HiveServer2, ZooKeeper, Keycloak, the KDC, HDFS, s3proxy, Trino, the reader JVMs) and the short-lived
// driver JVMs of RunScenario. A package's TestMain prints them (LaunchSummary) so that the suite's cost is counted,
// not only timed: counts do not move with the machine's load, seconds do.
var launches = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

// CountLaunch records one start of what (the test bed counts its own servers and drivers; e2e helpers count the
// clients they launch themselves, such as Spark and PyIceberg).
func CountLaunch(what string) {
	launches.Lock()
	launches.n[what]++
	launches.Unlock()
}

// launchName names a server command: a Java program by its main class, anything else by its binary.
func launchName(cmd *exec.Cmd) string {
	if filepath.Base(cmd.Path) != "java" {
		return filepath.Base(cmd.Path)
	}
	for i := 1; i < len(cmd.Args); i++ {
		a := cmd.Args[i]
		switch {
		case a == "-cp" || a == "-classpath" || a == "--class-path" || a == "-jar":
			if a == "-jar" && i+1 < len(cmd.Args) {
				return filepath.Base(cmd.Args[i+1])
			}
			i++
		case !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "@"):
			return a[strings.LastIndex(a, ".")+1:]
		}
	}
	return "java"
}

// LaunchSummary says how many of each process the test bed started in this process, most first, e.g.
// "12 driver JVMs (RunScenario), 3 HiveMetaStore, 1 krb5kdc"; "" when it started none.
func LaunchSummary() string {
	launches.Lock()
	defer launches.Unlock()
	type kv struct {
		k string
		n int
	}
	var l []kv
	for k, n := range launches.n {
		l = append(l, kv{k, n})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].n > l[j].n || l[i].n == l[j].n && l[i].k < l[j].k })
	var parts []string
	for _, e := range l {
		parts = append(parts, fmt.Sprintf("%d %s", e.n, e.k))
	}
	return strings.Join(parts, ", ")
}
