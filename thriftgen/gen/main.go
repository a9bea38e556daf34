// Command gen builds thriftgen's canonical schema and the Go code generated from it.
//
//	go run ./thriftgen/gen merge -delta thriftgen/hdp-delta.json -o thriftgen/schema.json A.json B.json ...
//	go run ./thriftgen/gen generate -schema thriftgen/schema.json -out thriftgen
//
// merge takes the per-profile schemas written by thriftgen/extract/SchemaExtractor.java, derives the delta's
// profiles and writes the canonical union. generate writes schema_gen.go, types_gen.go and client_gen.go.
// thriftgen/regen.sh runs the whole chain.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hms-proxy/hms-proxy/thriftgen/internal/codegen"
	"github.com/hms-proxy/hms-proxy/thriftgen/internal/schema"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "merge":
		err = runMerge(os.Args[2:])
	case "generate":
		err = runGenerate(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: gen merge -delta DELTA.json -o SCHEMA.json PROFILE.json...\n"+
		"       gen generate -schema SCHEMA.json -out DIR")
	os.Exit(2)
}

func runMerge(args []string) error {
	fs := flag.NewFlagSet("merge", flag.ExitOnError)
	deltaPath := fs.String("delta", "", "HDP delta file (thriftgen/hdp-delta.json)")
	out := fs.String("o", "", "output schema file")
	_ = fs.Parse(args)
	if *deltaPath == "" || *out == "" || fs.NArg() == 0 {
		return fmt.Errorf("merge needs -delta, -o and at least one extracted profile file")
	}
	merged, err := schema.Build(fs.Args(), *deltaPath)
	if err != nil {
		return err
	}
	b, err := merged.Marshal()
	if err != nil {
		return err
	}
	return writeIfChanged(*out, b)
}

func runGenerate(args []string) error {
	fs := flag.NewFlagSet("generate", flag.ExitOnError)
	schemaPath := fs.String("schema", "", "canonical schema (thriftgen/schema.json)")
	outDir := fs.String("out", "", "output folder (thriftgen)")
	_ = fs.Parse(args)
	if *schemaPath == "" || *outDir == "" {
		return fmt.Errorf("generate needs -schema and -out")
	}
	s, err := schema.Load(*schemaPath)
	if err != nil {
		return err
	}
	files, err := codegen.Generate(s)
	if err != nil {
		return err
	}
	for _, name := range codegen.FileNames {
		if err := writeIfChanged(filepath.Join(*outDir, name), files[name]); err != nil {
			return err
		}
	}
	return nil
}

func writeIfChanged(path string, b []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
		return nil
	}
	return os.WriteFile(path, b, 0o644)
}
