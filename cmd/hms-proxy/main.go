// Command hms-proxy is a Hive Metastore Thrift federation and compatibility
// proxy.
//
//	hms-proxy [serve] FILE          run with an hms-proxy.properties file
//	hms-proxy check-config FILE     validate FILE and print the effective configuration
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
)

const usage = `usage:
  hms-proxy [serve] FILE          run the proxy with an hms-proxy.properties file
  hms-proxy check-config FILE     validate FILE, print the verdict and the effective configuration
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	switch {
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
