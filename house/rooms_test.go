package house

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// room is one row of the rooms table of docs/architecture.md.
type room struct {
	folder string          // "router/planner"
	may    map[string]bool // rooms it may import
	all    bool            // "everything"
}

// readRooms parses the rooms table: | `folder/` | holds | `a`, `b` |.
func readRooms(t *testing.T) []room {
	t.Helper()
	f, err := os.Open(filepath.Join(root(t), "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rooms []room
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "| folder | holds | may import") {
			in = true
			continue
		}
		if !in {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 3 || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") {
			continue
		}
		r := room{folder: strings.TrimSuffix(strings.Trim(strings.TrimSpace(cells[0]), "`"), "/"), may: map[string]bool{}}
		switch may := strings.TrimSpace(cells[2]); may {
		case "everything":
			r.all = true
		case "nothing":
		default:
			for _, m := range strings.Split(may, ",") {
				r.may[strings.TrimSuffix(strings.Trim(strings.TrimSpace(m), "`"), "/")] = true
			}
		}
		rooms = append(rooms, r)
	}
	if len(rooms) < 10 {
		t.Fatalf("docs/architecture.md: found %d rooms in the rooms table", len(rooms))
	}
	return rooms
}

// allows reports whether the room may import room folder: one its row lists,
// or one inside a listed room.
func (r *room) allows(folder string) bool {
	for m := range r.may {
		if folder == m || strings.HasPrefix(folder, m+"/") {
			return true
		}
	}
	return false
}

// roomOf is the room of a package (its path inside the module): the row with
// the longest folder that holds it.
func roomOf(rooms []room, pkg string) *room {
	var best *room
	for i := range rooms {
		f := rooms[i].folder
		if (pkg == f || strings.HasPrefix(pkg, f+"/")) && (best == nil || len(f) > len(best.folder)) {
			best = &rooms[i]
		}
	}
	return best
}

// universal are the packages every room may import.
var universal = map[string]bool{"monitoring/metric": true}

type listed struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Standard   bool
	Module     *struct{ Path string }
}

// packages lists every package of the module with its imports (go list -deps).
func packages(t *testing.T) []listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json", "./...")
	cmd.Dir = root(t)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listed
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Module != nil && p.Module.Path == module {
			pkgs = append(pkgs, p)
		}
	}
	return pkgs
}

func rel(path string) string { return strings.TrimPrefix(strings.TrimPrefix(path, module), "/") }

// Every import of every package points down the rooms table: to its own
// room, a room its row lists, a room inside it, or monitoring/metric.
func TestImportsPointDownTheRoomsTable(t *testing.T) {
	rooms := readRooms(t)
	var bad []string
	for _, p := range packages(t) {
		from := rel(p.ImportPath)
		r := roomOf(rooms, from)
		if r == nil {
			bad = append(bad, from+": in no room of docs/architecture.md's table")
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to := rel(imp)
			tr := roomOf(rooms, to)
			switch {
			case tr == nil:
				bad = append(bad, from+" imports "+to+", which is in no room")
			case r.all, tr == r, r.allows(tr.folder), universal[to], strings.HasPrefix(tr.folder, r.folder+"/"):
			default:
				bad = append(bad, from+" (room "+r.folder+") imports "+to+" (room "+tr.folder+")")
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

// The planner decides without I/O: it reaches no pool (neither the router
// nor what builds it), and imports no network or process package.
func TestPlannerReachesNoPoolAndNoNetwork(t *testing.T) {
	forbiddenStd := map[string]bool{"net": true, "net/http": true, "net/netip": true, "os/exec": true, "syscall": true, "os": true}
	forbidden := map[string]bool{module + "/router": true, module + "/app": true, module + "/frontdoor": true,
		module + "/restcatalog": true}
	found := false
	for _, p := range packages(t) {
		if p.ImportPath != module+"/router/planner" {
			continue
		}
		found = true
		for _, imp := range p.Imports {
			if forbiddenStd[imp] {
				t.Errorf("router/planner imports %s", imp)
			}
		}
		for _, d := range p.Deps {
			if forbidden[d] {
				t.Errorf("router/planner depends on %s", rel(d))
			}
		}
	}
	if !found {
		t.Fatal("router/planner is not in go list's answer")
	}
}
