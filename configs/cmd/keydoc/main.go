// Command keydoc writes the key reference of docs/configuration.md from the
// configuration registry (package configs).
//
//	go run ./configs/cmd/keydoc            print the key reference
//	go run ./configs/cmd/keydoc -write     rewrite it in docs/configuration.md, between its markers
//	go run ./configs/cmd/keydoc -check     exit 1 when docs/configuration.md's copy is stale
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/hms-proxy/hms-proxy/configs"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the command: 0 done (or current), 1 stale (-check), 2 an error.
func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("keydoc", flag.ContinueOnError)
	fl.SetOutput(stderr)
	doc := fl.String("doc", configs.KeyReferenceFile, "the document to update (run from the repository root)")
	write := fl.Bool("write", false, "rewrite the key reference in -doc")
	check := fl.Bool("check", false, "exit 1 when -doc's key reference is stale")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if !*write && !*check {
		fmt.Fprint(stdout, configs.KeyReference())
		return 0
	}
	data, err := os.ReadFile(*doc)
	if err != nil {
		fmt.Fprintln(stderr, "keydoc:", err)
		return 2
	}
	out, err := configs.SpliceKeyReference(string(data))
	if err != nil {
		fmt.Fprintf(stderr, "keydoc: %s: %v\n", *doc, err)
		return 2
	}
	if *check {
		if out != string(data) {
			fmt.Fprintf(stderr, "keydoc: %s: the key reference is stale; run go run ./configs/cmd/keydoc -write\n", *doc)
			return 1
		}
		return 0
	}
	if out == string(data) {
		return 0
	}
	if err := os.WriteFile(*doc, []byte(out), 0o644); err != nil {
		fmt.Fprintln(stderr, "keydoc:", err)
		return 2
	}
	return 0
}
