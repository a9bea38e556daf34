// Command keydoc writes the README's key reference from the configuration
// registry (package configs).
//
//	go run ./configs/cmd/keydoc            print the key reference
//	go run ./configs/cmd/keydoc -write     rewrite it in README.md, between its markers
//	go run ./configs/cmd/keydoc -check     exit 1 when README.md's copy is stale
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/hms-proxy/hms-proxy/configs"
)

func main() {
	readme := flag.String("readme", "README.md", "the README to update")
	write := flag.Bool("write", false, "rewrite the key reference in -readme")
	check := flag.Bool("check", false, "exit 1 when -readme's key reference is stale")
	flag.Parse()
	if !*write && !*check {
		fmt.Print(configs.KeyReference())
		return
	}
	data, err := os.ReadFile(*readme)
	if err != nil {
		fmt.Fprintln(os.Stderr, "keydoc:", err)
		os.Exit(2)
	}
	out, err := configs.SpliceKeyReference(string(data))
	if err != nil {
		fmt.Fprintf(os.Stderr, "keydoc: %s: %v\n", *readme, err)
		os.Exit(2)
	}
	if *check {
		if out != string(data) {
			fmt.Fprintf(os.Stderr, "keydoc: %s: the key reference is stale; run go run ./configs/cmd/keydoc -write\n", *readme)
			os.Exit(1)
		}
		return
	}
	if out == string(data) {
		return
	}
	if err := os.WriteFile(*readme, []byte(out), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "keydoc:", err)
		os.Exit(2)
	}
}
