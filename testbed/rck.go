package testbed

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Apache Iceberg's REST Compatibility Kit (RCK): RESTCompatibilityKitSuite from the tests jar of
// org.apache.iceberg:iceberg-open-api, run by the JUnit console launcher against a REST catalog that is already
// running (rck.local=false). testbed/java/rck/pom.xml pins the kit and what it runs with.

// RCKOptions say what the kit runs against.
type RCKOptions struct {
	URI       string // the REST base URI (CATALOG_URI)
	Warehouse string // sent as ?warehouse= to /v1/config (CATALOG_WAREHOUSE)
	// Props are catalog properties of the kit's Java RESTCatalog (system properties: the kit reads them into the
	// catalog's properties), e.g. the rck.* capability switches, token or credential for OAuth2.
	Props map[string]string
	// Reports is the folder for the launcher's JUnit XML reports and output.
	Reports string
}

// RCKCase is one test the kit ran.
type RCKCase struct {
	Class, Name string
	Outcome     string // "passed", "failed", "skipped" (aborted: an assumption the kit declares was not met)
	Message     string
}

// RCKResult is one run of the kit.
type RCKResult struct {
	Cases []RCKCase
}

// Count returns how many tests had outcome.
func (r RCKResult) Count(outcome string) int {
	n := 0
	for _, c := range r.Cases {
		if c.Outcome == outcome {
			n++
		}
	}
	return n
}

// Summary is "P passed, F failed, S skipped of N".
func (r RCKResult) Summary() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped of %d", r.Count("passed"), r.Count("failed"), r.Count("skipped"), len(r.Cases))
}

// RCKLib returns the folder of the kit's jars, resolved from Maven Central into the cache when missing.
func RCKLib() (string, error) {
	return MavenLib("rck", filepath.Join(repoRoot(), "testbed", "java", "rck", "pom.xml"))
}

// RunRCK runs the whole kit once (one small JVM) and reads its JUnit report. An error means the kit could not
// run or report; failed tests are in the result.
func RunRCK(ctx context.Context, o RCKOptions) (RCKResult, error) {
	lib, err := RCKLib()
	if err != nil {
		return RCKResult{}, err
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return RCKResult{}, fmt.Errorf("java not found: %w", err)
	}
	if err := os.MkdirAll(o.Reports, 0o755); err != nil {
		return RCKResult{}, err
	}
	args := []string{"-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.io.tmpdir=" + o.Reports}
	keys := make([]string, 0, len(o.Props))
	for k := range o.Props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-D"+k+"="+o.Props[k])
	}
	args = append(args, "-cp", filepath.Join(lib, "*"), "org.junit.platform.console.ConsoleLauncher", "execute",
		"--select-class=org.apache.iceberg.rest.RESTCompatibilityKitSuite", "--config=rck.local=false",
		"--disable-banner", "--details=summary", "--reports-dir="+o.Reports)
	cmd, archived := JavaCommand(ctx, java, args...)
	cmd.Env = append(os.Environ(), "CATALOG_URI="+o.URI, "CATALOG_WAREHOUSE="+o.Warehouse)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	CountLaunch("RCK JVMs")
	runErr := cmd.Run()
	archived()
	_ = os.WriteFile(filepath.Join(o.Reports, "console.txt"), out.Bytes(), 0o644)
	res, err := readJUnitReports(o.Reports)
	if err != nil {
		return res, fmt.Errorf("the kit's report: %v (launcher: %v)\n%s", err, runErr, tail(out.String(), 30))
	}
	if len(res.Cases) == 0 {
		return res, fmt.Errorf("the kit ran no test (launcher: %v)\n%s", runErr, tail(out.String(), 30))
	}
	return res, nil
}

// readJUnitReports reads the legacy JUnit XML reports of a folder.
func readJUnitReports(dir string) (RCKResult, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.xml"))
	if err != nil || len(files) == 0 {
		return RCKResult{}, fmt.Errorf("no JUnit XML report in %s", dir)
	}
	type detail struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
	first := func(d *detail) string {
		if d.Message != "" {
			return d.Message
		}
		line, _, _ := strings.Cut(strings.TrimSpace(d.Text), "\n")
		return line
	}
	var suite struct {
		Cases []struct {
			Class   string  `xml:"classname,attr"`
			Name    string  `xml:"name,attr"`
			Failure *detail `xml:"failure"`
			Error   *detail `xml:"error"`
			Skipped *detail `xml:"skipped"`
		} `xml:"testcase"`
	}
	var res RCKResult
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return res, err
		}
		suite.Cases = nil
		if err := xml.Unmarshal(b, &suite); err != nil {
			return res, fmt.Errorf("%s: %v", f, err)
		}
		for _, c := range suite.Cases {
			rc := RCKCase{Class: c.Class[strings.LastIndexByte(c.Class, '.')+1:], Name: c.Name, Outcome: "passed"}
			switch {
			case c.Failure != nil:
				rc.Outcome, rc.Message = "failed", first(c.Failure)
			case c.Error != nil:
				rc.Outcome, rc.Message = "failed", first(c.Error)
			case c.Skipped != nil:
				rc.Outcome, rc.Message = "skipped", first(c.Skipped)
			}
			res.Cases = append(res.Cases, rc)
		}
	}
	return res, nil
}

// PrepareREST fetches and builds, once, everything the Iceberg REST tests and make demo run besides the metastores:
// the compatibility kit's jars, Keycloak (built, with its realm template), Trino unpacked twice, with its Iceberg
// plugin and with the Iceberg and Hive plugins (when a JDK it runs on exists), Iceberg's Spark runtime, and the
// PyIceberg and PySpark virtualenvs. make test calls it before the tests, so no test spends its time limit on
// downloads.
func PrepareREST() error {
	steps := []struct {
		what string
		run  func() error
	}{
		{"the REST compatibility kit", func() error { _, err := RCKLib(); return err }},
		{"Keycloak", func() error { _, err := keycloakDist(); return err }},
		{"Trino", func() error {
			if _, err := TrinoJava(); err != nil {
				return err
			}
			if _, err := trinoDist(false); err != nil {
				return err
			}
			_, err := trinoDist(true) // the same tarball, unpacked with the Hive plugin too
			return err
		}},
		{"Iceberg's Spark runtime", func() error { _, err := MavenArtifact(IcebergSparkRuntime); return err }},
		{"PyIceberg", func() error { _, _, err := Python("pyiceberg", PyIcebergPackages...); return err }},
		{"PySpark", func() error { _, _, err := Python("pyspark", PySparkPackages...); return err }},
	}
	for _, s := range steps {
		if err := s.run(); err != nil {
			return fmt.Errorf("preparing %s: %w", s.what, err)
		}
	}
	return nil
}
