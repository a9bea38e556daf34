// Class-data sharing for the test bed's JVMs: most of a short JVM's start-up CPU goes into loading and verifying
// the same few thousand classes from the same jars (a driver scenario, a metastore, a JDBC client). JDK 17 can write
// the classes a JVM loaded into an archive at its exit (-XX:ArchiveClassesAtExit) and map that archive into later
// JVMs of the same class path (-XX:SharedArchiveFile). Measured on this machine (JDK 17.0.15, two cores): a Hive
// 4.1.0 driver scenario 1.3 → 0.7 CPU seconds, a Hive 4.1.0 metastore's start 3.9 → 2.1 CPU seconds.
//
// One archive per key: the JDK, the JVM options (system properties aside), every jar of the class path with its
// size and time, and the main class. The first JVM of a key that claims it writes the archive to a temporary file,
// which is renamed into place after a clean exit; the others run without one meanwhile. The JVM checks the archive
// against its class path itself and runs without it when anything differs, silently: the class-data log is off, and
// the JVM's other warnings go to stderr, so a driver's stdout carries its steps only. HMS_PROXY_CDS=off turns the
// archives off (for measurements).

package testbed

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// classArchiveLog: no class-data messages anywhere (a mismatch only means no archive), other JVM warnings on stderr.
var classArchiveLog = []string{"-Xlog:disable", "-Xlog:all=warning:stderr", "-Xlog:cds*=off:stderr"}

// dynamicArchiveMagic starts every dynamic class-data archive JDK 17 writes (CDS_DYNAMIC_ARCHIVE_MAGIC, little-endian);
// the JVM writes the header last, so a file cut short by a kill does not have it.
var dynamicArchiveMagic = []byte{0xa8, 0xab, 0x0b, 0xf0}

var archiveSeq atomic.Int64

// classArchive is an archive a JVM is writing at its exit; publish moves it into place.
type classArchive struct {
	tmp, final, claim string
}

// withClassArchive returns the arguments of a java command line (JVM options, -cp CLASSPATH, the main class or
// source file, its arguments) with the options that map the archive of its key, or, when there is none yet and
// this JVM may write it, with the option that writes it (then the returned *classArchive is non-nil: call publish
// after the JVM exited). Command lines it cannot key (no -cp, a class directory before a jar, archives off) are
// returned as they are.
func withClassArchive(java string, args []string) ([]string, *classArchive) {
	if os.Getenv("HMS_PROXY_CDS") == "off" {
		return args, nil
	}
	key, ok := classArchiveKey(java, args)
	if !ok {
		return args, nil
	}
	dir := filepath.Join(Cache(), "cds")
	final := filepath.Join(dir, key+".jsa")
	with := func(opt string) []string { return append(append([]string{opt}, classArchiveLog...), args...) }
	if validArchive(final) {
		if st, err := os.Stat(final); err == nil && time.Since(st.ModTime()) > time.Hour {
			now := time.Now()
			_ = os.Chtimes(final, now, now) // in use: keep it from the sweep
		}
		return with("-XX:SharedArchiveFile=" + final), nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return args, nil
	}
	claim := final + ".claim"
	if !claimArchive(claim) {
		return args, nil // another JVM is writing it
	}
	tmp := fmt.Sprintf("%s.%d.%d.tmp", final, os.Getpid(), archiveSeq.Add(1))
	return with("-XX:ArchiveClassesAtExit=" + tmp), &classArchive{tmp: tmp, final: final, claim: claim}
}

// JavaCommand is exec.CommandContext(ctx, java, args...) for a short-lived JVM, with the class-data archive of its
// class path; call done after the command finished (it keeps an archive the JVM wrote at its exit).
func JavaCommand(ctx context.Context, java string, args ...string) (cmd *exec.Cmd, done func()) {
	args, archive := withClassArchive(java, args)
	cmd = exec.CommandContext(ctx, java, args...)
	return cmd, func() { archive.publish(cmd.ProcessState) }
}

// publish renames the archive into place when the JVM exited by itself or on SIGTERM and wrote a whole archive;
// otherwise it drops it, and the next JVM of the key tries again.
func (a *classArchive) publish(state *os.ProcessState) {
	if a == nil {
		return
	}
	defer os.Remove(a.claim)
	killed := false
	if state != nil {
		if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			killed = true
		}
	}
	if state == nil || killed || !validArchive(a.tmp) || os.Rename(a.tmp, a.final) != nil {
		os.Remove(a.tmp)
		return
	}
	sweepArchives(filepath.Dir(a.final))
}

// archiveUnused is how long an archive no JVM mapped stays: a rebuilt jar or JDK makes a new key, and the old
// archives (20-100 MB each) would pile up in the cache.
const archiveUnused = 48 * time.Hour

// sweepArchives removes the archives of dir no JVM mapped for archiveUnused (a JVM mapping one keeps its mapping).
func sweepArchives(dir string) {
	list, _ := filepath.Glob(filepath.Join(dir, "*.jsa"))
	for _, f := range list {
		if st, err := os.Stat(f); err == nil && time.Since(st.ModTime()) > archiveUnused {
			os.Remove(f)
		}
	}
}

// validArchive: the file exists and starts with the magic of a dynamic archive.
func validArchive(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len(dynamicArchiveMagic))
	if _, err := f.Read(head); err != nil {
		return false
	}
	return bytes.Equal(head, dynamicArchiveMagic)
}

// claimArchive creates the claim file of a key, naming this process; a claim whose process is gone is taken over.
func claimArchive(claim string) bool {
	for attempt := 0; attempt < 2; attempt++ {
		f, err := os.OpenFile(claim, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			pid := os.Getpid()
			_, werr := fmt.Fprintf(f, "%d %s\n", pid, procStart(pid))
			if cerr := f.Close(); werr != nil || cerr != nil {
				os.Remove(claim)
				return false
			}
			return true
		}
		if !os.IsExist(err) {
			return false
		}
		data, err := os.ReadFile(claim)
		if err != nil {
			return false
		}
		fields := strings.Fields(string(data))
		if len(fields) != 2 {
			return false // being written
		}
		pid, err := strconv.Atoi(fields[0])
		if err != nil || procStart(pid) == fields[1] {
			return false // its writer is alive
		}
		// its writer is gone: so is what it left half-written
		left, _ := filepath.Glob(strings.TrimSuffix(claim, ".claim") + "." + fields[0] + ".*.tmp")
		for _, f := range left {
			os.Remove(f)
		}
		os.Remove(claim)
	}
	return false
}

// classArchiveKey hashes what the archive depends on; ok is false for a command line the archive cannot serve:
// no class path, or a non-empty directory before a jar (the JVM refuses to write an archive then). Directories at
// the end of the class path (a server's conf directory) are left out of the key: the JVM checks the class path only
// up to the last entry it loaded a class from, and they must hold no classes.
func classArchiveKey(java string, args []string) (string, bool) {
	jdk, err := exec.LookPath(java)
	if err != nil {
		return "", false
	}
	if jdk, err = filepath.EvalSymlinks(jdk); err != nil {
		return "", false
	}
	h := sha256.New()
	home := filepath.Dir(filepath.Dir(jdk))
	fmt.Fprintf(h, "java %s\n", jdk)
	for _, f := range []string{"lib/server/libjvm.so", "lib/server/classes.jsa", "lib/modules"} {
		fmt.Fprintf(h, "%s %s\n", f, fileStamp(filepath.Join(home, f)))
	}
	cp := -1
	for i, a := range args {
		if a == "-cp" || a == "-classpath" || a == "--class-path" {
			cp = i
			break
		}
		if a == "-jar" || strings.HasPrefix(a, "-XX:SharedArchiveFile") || strings.HasPrefix(a, "-XX:ArchiveClassesAtExit") ||
			strings.HasPrefix(a, "-Xshare") {
			return "", false
		}
		if !strings.HasPrefix(a, "-D") {
			fmt.Fprintf(h, "option %s\n", a)
		}
	}
	if cp < 0 || cp+1 >= len(args) {
		return "", false
	}
	main := ""
	if cp+2 < len(args) {
		main = args[cp+2]
	}
	fmt.Fprintf(h, "main %s\n", main)
	var dirs []string // the directories since the last jar
	for _, e := range filepath.SplitList(args[cp+1]) {
		if st, err := os.Stat(e); err == nil && st.IsDir() {
			dirs = append(dirs, e)
			continue
		}
		if !emptyDirs(dirs) {
			return "", false
		}
		for _, d := range dirs {
			fmt.Fprintf(h, "empty dir %s\n", d)
		}
		dirs = nil
		if strings.HasSuffix(e, string(filepath.Separator)+"*") || e == "*" {
			dir := strings.TrimSuffix(e, "*")
			list, err := os.ReadDir(dir)
			if err != nil {
				return "", false
			}
			fmt.Fprintf(h, "wildcard %s\n", e)
			for _, j := range list {
				if n := strings.ToLower(j.Name()); strings.HasSuffix(n, ".jar") {
					fmt.Fprintf(h, "  %s %s\n", j.Name(), fileStamp(filepath.Join(dir, j.Name())))
				}
			}
			continue
		}
		fmt.Fprintf(h, "entry %s %s\n", e, fileStamp(e))
	}
	for _, d := range dirs {
		if holdsClasses(d) {
			return "", false
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:24], true
}

// emptyDirs: every directory is empty (the JVM accepts empty directories anywhere in an archived class path).
func emptyDirs(dirs []string) bool {
	for _, d := range dirs {
		list, err := os.ReadDir(d)
		if err != nil || len(list) > 0 {
			return false
		}
	}
	return true
}

// holdsClasses: a .class file anywhere under dir (or dir unreadable).
func holdsClasses(dir string) bool {
	found := false
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".class") {
			found = true
			return fs.SkipAll
		}
		return nil
	})
	return found || err != nil
}

// fileStamp is a file's size and modification time ("missing" when it does not exist).
func fileStamp(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return "missing"
	}
	return fmt.Sprintf("%d %d", st.Size(), st.ModTime().UnixNano())
}

// sparkJVM are the start-up flags of a local Spark session's driver JVM, as the bed's other JVMs have them: the
// serial collector and C1 only (a session's few statements do not repay C2 and the parallel collector on two cores).
var sparkJVM = []string{"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}

// SparkSubmitOptions is the SPARK_SUBMIT_OPTS=... environment entry for a PySpark program run with the virtualenv
// interpreter py: sparkJVM and the class-data archive of Spark's driver JVM (whose command line spark-submit
// builds: pyspark's conf directory and jars). Call done with the program's exit state after it exited; the program
// must wait for its JVM to exit (testdata's Spark scripts close the gateway and wait), or no archive is kept.
// A minimal session measured 14.2 CPU seconds with Spark's defaults, 8.0 with sparkJVM, 4.6 with the archive too.
func SparkSubmitOptions(py string) (env string, done func(*os.ProcessState)) {
	opts := append([]string{}, sparkJVM...)
	none := func(*os.ProcessState) {}
	java, err := javaBin()
	jars, _ := filepath.Glob(filepath.Join(filepath.Dir(filepath.Dir(py)), "lib", "python3*", "site-packages", "pyspark", "jars"))
	if err != nil || len(jars) != 1 {
		return "SPARK_SUBMIT_OPTS=" + strings.Join(opts, " "), none
	}
	pyspark := filepath.Dir(jars[0])
	cp := filepath.Join(pyspark, "conf") + string(filepath.ListSeparator) + filepath.Join(jars[0], "*")
	args := append(append([]string{}, opts...), "-cp", cp, "org.apache.spark.deploy.SparkSubmit")
	with, archive := withClassArchive(java, args)
	opts = with[:len(with)-3] // the archive's options and sparkJVM, without -cp and the main class
	return "SPARK_SUBMIT_OPTS=" + strings.Join(opts, " "), archive.publish
}
