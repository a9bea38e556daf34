// Command hms-proxy is a Hive Metastore Thrift federation and compatibility
// proxy.
//
//	hms-proxy [serve] FILE          run with an hms-proxy.properties file
//	hms-proxy check-config FILE     validate FILE and print the effective configuration
//	hms-proxy version               print the version and build information (also --version)
//	hms-proxy help [COMMAND]        print usage on standard output (also -h, --help)
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

// Exit statuses of the dispatcher; serve also exits 1 when the proxy
// stopped on a runtime error, and 2 on an invalid configuration.
const (
	exitOK    = 0
	exitUsage = 2 // a wrong invocation
)

// anyArgs marks a command that checks its own arguments.
const anyArgs = -1

// command is one subcommand: a row of the dispatch table.
type command struct {
	name     string
	synopsis string // the arguments, as the usage line shows them
	summary  string // one line for the usage text
	detail   string // more text for "help COMMAND" (optional)
	nargs    int    // exact number of arguments, or anyArgs
	ownHelp  bool   // the command answers -h/--help itself (one with flags of its own)
	// run runs the command; nil for help, which dispatch answers from the
	// table it was given.
	run func(args []string, stdout, stderr io.Writer) int
}

// commands is the dispatch table, in the order the usage text lists it.
func commands() []command {
	return []command{
		{name: "serve", synopsis: "FILE", nargs: 1,
			summary: "run the proxy with an hms-proxy.properties file (also: hms-proxy FILE)",
			detail: "SIGTERM or SIGINT stop it in order within server.shutdown-timeout-seconds: listeners stop\n" +
				"accepting, calls in flight finish, backend sessions close. The log goes to standard error\n" +
				"(and to logging.file when set).",
			run: func(args []string, _, stderr io.Writer) int { return serve(args[0], stderr) }},
		{name: "check-config", synopsis: "FILE", nargs: 1,
			summary: "validate FILE, print the verdict and the effective configuration",
			detail: "Prints \"FILE: OK\", the warnings and every key's effective value on standard output\n" +
				"(exit status 0), or \"FILE: INVALID\" and one line per problem on standard error (exit status 2).",
			run: checkConfig},
		{name: "version", nargs: 0,
			summary: "print the version and build information (also: --version)",
			run: func(_ []string, stdout, _ io.Writer) int {
				currentBuildInfo().write(stdout)
				return exitOK
			}},
		{name: "smoke", synopsis: "txn|lock|notification [flags]", nargs: anyArgs, ownHelp: true,
			summary: "the manual HMS smoke client: direct metastore RPCs against a proxy or a metastore",
			run: func(args []string, stdout, stderr io.Writer) int {
				if len(args) == 0 || isHelpFlag(args[0]) || args[0] == "help" {
					fmt.Fprint(stdout, smokeUsage)
					if len(args) == 0 {
						return exitUsage
					}
					return exitOK
				}
				return smoke.Run(args, stdout, stderr)
			}},
		{name: "help", synopsis: "[COMMAND]", nargs: anyArgs,
			summary: "print this help, or a command's (also: -h, --help)"},
	}
}

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

func isHelpFlag(s string) bool { return s == "-h" || s == "--help" || s == "-help" }

func isVersionFlag(s string) bool { return s == "--version" || s == "-version" }

func lookup(cmds []command, name string) (command, bool) {
	for _, c := range cmds {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// run dispatches the command line. Usage asked for goes to stdout with exit
// status 0; a wrong invocation is reported on stderr, with the usage, and
// exit status 2.
func run(args []string, stdout, stderr io.Writer) int {
	return dispatch(commands(), args, stdout, stderr)
}

// dispatch runs args against a command table.
func dispatch(cmds []command, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return usageError(cmds, stderr, "no command or configuration file given")
	}
	first, rest := args[0], args[1:]
	switch {
	case isHelpFlag(first):
		first = "help"
	case isVersionFlag(first):
		first = "version"
	}
	if c, ok := lookup(cmds, first); ok {
		if c.name != "help" && !c.ownHelp && len(rest) == 1 && isHelpFlag(rest[0]) {
			writeCommandHelp(stdout, c)
			return exitOK
		}
		if c.nargs != anyArgs && len(rest) != c.nargs {
			return usageError(cmds, stderr, fmt.Sprintf("%s takes %s, got %s", c.name, argCount(c), quoteArgs(rest)))
		}
		if c.run == nil {
			return help(cmds, rest, stdout, stderr)
		}
		return c.run(rest, stdout, stderr)
	}
	if strings.HasPrefix(first, "-") {
		return usageError(cmds, stderr, fmt.Sprintf("unknown option %q", first))
	}
	if len(args) > 1 {
		return usageError(cmds, stderr, fmt.Sprintf("unknown command %q", first))
	}
	// hms-proxy FILE: a missing file whose name is a near miss of a command
	// is a mistyped command, not a configuration file.
	if _, err := os.Stat(first); err != nil {
		if near := nearCommand(cmds, first); near != "" {
			return usageError(cmds, stderr, fmt.Sprintf("unknown command %q (did you mean %q?), and no configuration file of that name exists", first, near))
		}
	}
	return serve(first, stderr)
}

func argCount(c command) string {
	switch c.nargs {
	case 0:
		return "no arguments"
	case 1:
		return "exactly one argument (" + c.synopsis + ")"
	}
	return fmt.Sprintf("exactly %d arguments (%s)", c.nargs, c.synopsis)
}

func quoteArgs(args []string) string {
	if len(args) == 0 {
		return "none"
	}
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf("%d: %s", len(args), strings.Join(q, " "))
}

// nearCommand returns the command name within two edits of s, if any.
func nearCommand(cmds []command, s string) string {
	for _, c := range cmds {
		if configs.EditDistance(strings.ToLower(s), c.name) <= 2 {
			return c.name
		}
	}
	return ""
}

func usageError(cmds []command, stderr io.Writer, msg string) int {
	fmt.Fprintf(stderr, "hms-proxy: %s\n\n", msg)
	writeUsage(stderr, cmds)
	return exitUsage
}

func writeUsage(w io.Writer, cmds []command) {
	fmt.Fprintln(w, "Usage:")
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-33s %s\n", strings.TrimSpace("hms-proxy "+c.name+" "+c.synopsis), c.summary)
	}
	fmt.Fprint(w, `
Exit status: 0 success, 1 the proxy stopped on an error, 2 wrong invocation or invalid configuration.
The keys of hms-proxy.properties are described in docs/configuration.md (the key reference).
`)
}

func writeCommandHelp(w io.Writer, c command) {
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", strings.TrimSpace("hms-proxy "+c.name+" "+c.synopsis), c.summary)
	if c.detail != "" {
		fmt.Fprintf(w, "\n%s\n", c.detail)
	}
}

func help(cmds []command, args []string, stdout, stderr io.Writer) int {
	switch len(args) {
	case 0:
		writeUsage(stdout, cmds)
		return exitOK
	case 1:
		if c, ok := lookup(cmds, args[0]); ok {
			writeCommandHelp(stdout, c)
			return exitOK
		}
		return usageError(cmds, stderr, fmt.Sprintf("help: unknown command %q", args[0]))
	}
	return usageError(cmds, stderr, fmt.Sprintf("help takes at most one argument (COMMAND), got %s", quoteArgs(args)))
}

// checkConfig prints the verdict on a file: OK, its warnings and the
// effective configuration of every key (from the registry, grouped by
// feature with each feature's status); or INVALID with each refusal (a value
// asking for something not built yet), each error and the warnings.
func checkConfig(args []string, stdout, stderr io.Writer) int {
	path := args[0]
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
	// The storage keys (HDFS, S3) as the start checks them.
	if err := app.CheckStorage(cfg); err != nil {
		fmt.Fprintf(stderr, "%s: INVALID\nerror: %v\n", path, err)
		return 2
	}
	fmt.Fprintf(stdout, "%s: OK\n", path)
	for _, w := range cfg.Warnings {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	fmt.Fprint(stdout, cfg.Effective())
	return 0
}

func newLogger(cfg configs.LoggingConfig, stderr io.Writer) (*slog.Logger, *slog.LevelVar, io.Closer, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.Level)); err != nil {
		return nil, nil, nil, fmt.Errorf("logging.level=%q: %v", cfg.Level, err)
	}
	lv := new(slog.LevelVar) // a reload changes it
	lv.Set(level)
	var w io.Writer = stderr
	var closer io.Closer = io.NopCloser(nil)
	if cfg.File != "" {
		f, err := audit.OpenRollingFile(cfg.File, cfg.MaxFileSizeBytes, cfg.MaxBackups)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("logging.file=%s: %v", cfg.File, err)
		}
		w, closer = io.MultiWriter(stderr, f), f
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lv})), lv, closer, nil
}

func serve(path string, stderr io.Writer) int {
	cfg, props, err := app.ReadConfigFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "hms-proxy: refusing to start, %s is invalid:\n%v\n", path, err)
		return 2
	}
	log, level, logCloser, err := newLogger(cfg.Logging, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "hms-proxy: refusing to start: %v\n", err)
		return 2
	}
	defer logCloser.Close()
	for _, w := range cfg.Warnings {
		log.Warn("configuration", "warning", w)
	}
	if err := start(cfg, log, level, path, props); err != nil {
		log.Error("hms-proxy stopped", "err", err)
		return 1
	}
	return 0
}

// start assembles the proxy, serves until SIGTERM/SIGINT and shuts down in
// order within server.shutdown-timeout-seconds. SIGHUP re-reads the file and
// applies what can change live (app.Reload); an invalid file is refused and
// the running configuration kept.
func start(cfg *configs.Config, log *slog.Logger, level *slog.LevelVar, path string, props map[string]string) error {
	// SIGHUP is caught before anything is built, so a reload sent early
	// never kills the process; it is served once the listeners are up.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	a, err := app.Build(cfg, log)
	if err != nil {
		return err
	}
	a.LogLevel = level
	a.SetSource(path, props)
	if err := a.Start(); err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	var s os.Signal
	for s == nil {
		select {
		case <-hup:
			log.Info("SIGHUP: reloading the configuration", "file", path)
			if out, err := a.Reload(context.Background()); err == nil {
				log.Info("SIGHUP: configuration reloaded", "result", out.String())
			}
		case s = <-sig:
		}
	}
	log.Info("shutting down", "signal", s.String(), "timeout", cfg.Server.ShutdownTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownTimeout)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		log.Warn("shutdown did not finish cleanly within server.shutdown-timeout-seconds; exiting anyway", "err", err)
	}
	log.Info("stopped")
	return nil
}
