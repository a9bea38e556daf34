// Command hmsbed drives the real-Hive test bed by hand (make demo uses it):
//
//	hmsbed prepare                                      resolve jars, build the driver and schema templates
//	hmsbed start --hive 3.1.3 [--hive 4.1.0 ...] [--print-env] [--exit-when-ready]
//	                                                    start metastores, print their endpoints, stop them on
//	                                                    SIGINT/SIGTERM (or when the parent process goes away)
//	hmsbed run --client 3.1.3 --uri thrift://H:P SCENARIO [scenario args]
//	                                                    run a Java driver scenario, print its steps
//	hmsbed prepare-rest                                 fetch and build what the Iceberg REST tests run (kit,
//	                                                    Keycloak, Trino, Spark runtime, Python clients)
//	hmsbed rest-clients                                 build (once, in the cache) the Iceberg REST clients the
//	                                                    tests use and print them as shell assignments:
//	                                                    PYICEBERG_PYTHON, PYSPARK_PYTHON, ICEBERG_SPARK_JAR
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hms-proxy/hms-proxy/testbed"
)

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "prepare":
		err = testbed.Prepare()
	case "start":
		err = start(os.Args[2:])
	case "run":
		err = run(os.Args[2:])
	case "rest-clients":
		err = restClients()
	case "prepare-rest":
		err = testbed.PrepareREST()
	case "-h", "--help", "help":
		usage(os.Stdout)
		return
	default:
		fmt.Fprintf(os.Stderr, "hmsbed: unknown command %q\n", os.Args[1])
		usage(os.Stderr)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "hmsbed: %v\n", err)
		os.Exit(1)
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  hmsbed prepare
  hmsbed start --hive VERSION [--hive VERSION ...] [--print-env] [--exit-when-ready]
  hmsbed run --client VERSION --uri thrift://HOST:PORT SCENARIO [scenario args]
  hmsbed prepare-rest
  hmsbed rest-clients
versions: 3.1.3, 4.1.0; scenarios: version, ddl, lossless (see docs/testbed.md)
`)
}

type versionList []testbed.Version

func (l *versionList) String() string { return fmt.Sprint(*l) }
func (l *versionList) Set(s string) error {
	*l = append(*l, testbed.Version(s))
	return nil
}

func start(args []string) error {
	fs := flag.NewFlagSet("start", flag.ContinueOnError)
	var hives versionList
	fs.Var(&hives, "hive", "Hive version of a metastore to start (repeatable): 3.1.3 or 4.1.0")
	printEnv := fs.Bool("print-env", false, "print endpoints as HMS_<n>_URI=... lines (for scripts)")
	exitWhenReady := fs.Bool("exit-when-ready", false, "stop everything once all metastores are ready (timing)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(hives) == 0 || fs.NArg() > 0 {
		return fmt.Errorf("start: give at least one --hive VERSION and no other arguments (got %q)", fs.Args())
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)

	t0 := time.Now()
	if err := testbed.Prepare(); err != nil {
		return err
	}
	prepared := time.Since(t0)
	ms, err := testbed.StartMetastores(hives...)
	if err != nil {
		return err
	}
	ready := time.Since(t0)
	stopAll := func() {
		for _, m := range ms {
			if err := m.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "hmsbed: %v (files kept: %s)\n", err, m.Dir)
				continue
			}
			os.RemoveAll(m.Dir)
		}
	}

	for i, m := range ms {
		fmt.Fprintf(os.Stderr, "hmsbed: Hive %s metastore ready at %s (files: %s)\n", m.Version, m.URI, m.Dir)
		if *printEnv {
			fmt.Printf("HMS_%d_VERSION=%s\nHMS_%d_URI=%s\nHMS_%d_PORT=%d\nHMS_%d_DIR=%s\n",
				i+1, m.Version, i+1, m.URI, i+1, m.Port, i+1, m.Dir)
		}
	}
	fmt.Fprintf(os.Stderr, "hmsbed: all %d metastores ready %.1fs after start (prepare %.1fs)\n",
		len(ms), ready.Seconds(), prepared.Seconds())
	if *printEnv {
		fmt.Printf("HMS_COUNT=%d\nHMS_READY_SECONDS=%.1f\nHMS_READY=1\n", len(ms), ready.Seconds())
	}
	if *exitWhenReady {
		stopAll()
		return nil
	}

	// stop when signalled, or when the parent (e.g. the demo script) is gone
	parent := os.Getppid()
	orphaned := make(chan struct{})
	go func() {
		for range time.Tick(time.Second) {
			if os.Getppid() != parent {
				close(orphaned)
				return
			}
		}
	}()
	select {
	case s := <-sigs:
		fmt.Fprintf(os.Stderr, "hmsbed: %v: stopping %d metastores\n", s, len(ms))
	case <-orphaned:
		fmt.Fprintf(os.Stderr, "hmsbed: parent process gone: stopping %d metastores\n", len(ms))
	}
	stopAll()
	return nil
}

func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	client := fs.String("client", string(testbed.Hive313), "Hive version of the Java client: 3.1.3 or 4.1.0")
	uri := fs.String("uri", "thrift://127.0.0.1:9083", "metastore (or proxy) to talk to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("run: name a scenario (version, ddl, lossless)")
	}
	steps, err := testbed.RunScenario(testbed.Version(*client), *uri, fs.Arg(0), fs.Args()[1:]...)
	for _, s := range steps {
		fmt.Println(s)
	}
	if err != nil {
		// the steps are printed already; keep the error short
		first, _, _ := strings.Cut(err.Error(), "\n")
		return fmt.Errorf("%s", first)
	}
	fmt.Printf("all %d steps passed\n", len(steps))
	return nil
}

// restClients builds the PyIceberg and PySpark virtualenvs and fetches the Iceberg Spark runtime, all as the tests
// have them, and prints where they are.
func restClients() error {
	py, _, err := testbed.Python("pyiceberg", testbed.PyIcebergPackages...)
	if err != nil {
		return err
	}
	spark, _, err := testbed.Python("pyspark", testbed.PySparkPackages...)
	if err != nil {
		return err
	}
	jar, err := testbed.MavenArtifact(testbed.IcebergSparkRuntime)
	if err != nil {
		return err
	}
	fmt.Printf("PYICEBERG_PYTHON=%s\nPYSPARK_PYTHON=%s\nICEBERG_SPARK_JAR=%s\n", py, spark, jar)
	return nil
}
