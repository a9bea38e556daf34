// Command hms-proxy is a Hive Metastore Thrift federation and compatibility
// proxy.
//
//	hms-proxy [serve] FILE          run with an hms-proxy.properties file
//	hms-proxy check-config FILE     validate FILE and print the effective configuration
//	hms-proxy smoke MODE [flags]    the manual HMS smoke client (tools/smoke): txn, lock, notification
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hms-proxy/hms-proxy/app"
	"github.com/hms-proxy/hms-proxy/audit"
	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/tools/smoke"
)

const usage = `usage:
  hms-proxy [serve] FILE          run the proxy with an hms-proxy.properties file
  hms-proxy check-config FILE     validate FILE, print the verdict and the effective configuration
  hms-proxy smoke MODE [flags]    direct metastore RPCs against a proxy or a metastore (hms-proxy smoke --help)
`

const smokeUsage = `usage: hms-proxy smoke txn|lock|notification --uri thrift://HOST:PORT [flags]

The manual HMS smoke client: direct metastore RPCs against a proxy or a metastore,
one line per call ("ok"/"FAIL", name, milliseconds, detail). Exit 0 when every
call behaved, 1 when one failed, 2 on bad arguments.

modes:
  txn            open_txns, allocate_table_write_ids, lock, check_lock,
                 get_valid_write_ids, commit_txn on a transactional table
                 (--db, --table; the default catalog's, as ACID tables are)
  lock           open_txns, lock, check_lock, [heartbeat], [unlock], then
                 commit_txn, abort_txn or nothing (--close-txn); the shortest way
                 to exercise the synthetic lock shim of a non-default catalog:
                   hms-proxy smoke lock --uri thrift://proxy:9083 --db catalog2__sales \
                     --lock-type SHARED_READ --lock-level DB --operation-type NO_TXN
  notification   add_write_notification_log (Hive 4 and Hortonworks metastores)

A txn or lock run that fails after open_txns aborts its transaction before it
exits, also with --close-txn none.

hms-proxy smoke MODE --help lists the flags of a mode.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) >= 1 && args[0] == "smoke":
		if len(args) == 1 || args[1] == "-h" || args[1] == "-help" || args[1] == "--help" || args[1] == "help" {
			fmt.Fprint(stdout, smokeUsage)
			if len(args) == 1 {
				return 2
			}
			return 0
		}
		return smoke.Run(args[1:], stdout, stderr)
	case len(args) == 2 && args[0] == "check-config":
		return checkConfig(args[1], stdout, stderr)
	case len(args) == 2 && args[0] == "serve":
		return serve(args[1], stderr)
	case len(args) == 1 && !strings.HasPrefix(args[0], "-"):
		return serve(args[0], stderr)
	}
	fmt.Fprint(stderr, usage)
	return 2
}

// checkConfig prints the verdict on a file: OK, its warnings and the
// effective configuration of every key (from the registry, grouped by
// feature with each feature's status); or INVALID with each refusal (a value
// asking for something not built yet), each error and the warnings.
func checkConfig(path string, stdout, stderr io.Writer) int {
	cfg, err := configs.Load(path)
	var ve *configs.ValidationError
	switch {
	case errors.As(err, &ve):
		fmt.Fprintf(stderr, "%s: INVALID\n", path)
		for _, e := range ve.Errors {
			kind := "error"
			if e.NotBuilt {
				kind = "refused"
			}
			fmt.Fprintf(stderr, "%s: %v\n", kind, e)
		}
		for _, w := range ve.Warnings {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "%s: INVALID\n%v\n", path, err)
		return 2
	}
	fmt.Fprintf(stdout, "%s: OK\n", path)
	for _, w := range cfg.Warnings {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	fmt.Fprint(stdout, cfg.Effective())
	return 0
}

func newLogger(cfg configs.LoggingConfig, stderr io.Writer) (*slog.Logger, io.Closer, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.Level)); err != nil {
		return nil, nil, fmt.Errorf("logging.level=%q: %v", cfg.Level, err)
	}
	var w io.Writer = stderr
	var closer io.Closer = io.NopCloser(nil)
	if cfg.File != "" {
		f, err := audit.OpenRollingFile(cfg.File, cfg.MaxFileSizeBytes, cfg.MaxBackups)
		if err != nil {
			return nil, nil, fmt.Errorf("logging.file=%s: %v", cfg.File, err)
		}
		w, closer = io.MultiWriter(stderr, f), f
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})), closer, nil
}

func serve(path string, stderr io.Writer) int {
	cfg, err := configs.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "hms-proxy: refusing to start, %s is invalid:\n%v\n", path, err)
		return 2
	}
	log, logCloser, err := newLogger(cfg.Logging, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "hms-proxy: refusing to start: %v\n", err)
		return 2
	}
	defer logCloser.Close()
	for _, w := range cfg.Warnings {
		log.Warn("configuration", "warning", w)
	}
	if err := start(cfg, log); err != nil {
		log.Error("hms-proxy stopped", "err", err)
		return 1
	}
	return 0
}

// start assembles the proxy, serves until SIGTERM/SIGINT and shuts down in
// order within server.shutdown-timeout-seconds.
func start(cfg *configs.Config, log *slog.Logger) error {
	a, err := app.Build(cfg, log)
	if err != nil {
		return err
	}
	if err := a.Start(); err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	s := <-sig
	log.Info("shutting down", "signal", s.String(), "timeout", cfg.Server.ShutdownTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownTimeout)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		log.Warn("shutdown did not finish cleanly within server.shutdown-timeout-seconds; exiting anyway", "err", err)
	}
	log.Info("stopped")
	return nil
}
