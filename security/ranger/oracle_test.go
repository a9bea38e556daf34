package ranger

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/testbed"
)

// The differential test: Apache Ranger 2.5.0's own policy engine (the Java
// ranger-plugins-common from Maven Central, testbed/java/ranger) and this
// package's evaluator decide the same generated requests against the same
// generated policy sets, read from the same policy-cache files. Every answer
// must agree: allowed or denied, and the policy that decided.

var oracle struct {
	once sync.Once
	o    *testbed.RangerOracle
	err  error
}

func startOracle(t testing.TB) *testbed.RangerOracle {
	t.Helper()
	oracle.once.Do(func() { oracle.o, oracle.err = testbed.StartRangerOracle() })
	if errors.Is(oracle.err, testbed.ErrSkip) {
		t.Skip(oracle.err.Error())
	}
	if oracle.err != nil {
		t.Fatalf("starting the Ranger oracle: %v", oracle.err)
	}
	return oracle.o
}

func TestMain(m *testing.M) {
	code := m.Run()
	if oracle.o != nil {
		oracle.o.Close()
	}
	os.Exit(code)
}

// agreement runs one policy set with its cases through both engines; it
// returns the number of cases and the disagreements.
func agreement(t testing.TB, o *testbed.RangerOracle, dir string, sp *ServicePolicies, roles *Roles, cases []Request) (int, []string) {
	t.Helper()
	pf, rf := filepath.Join(dir, "hms-proxy_hms_hive.json"), filepath.Join(dir, "hms-proxy_hms_hive_roles.json")
	for f, v := range map[string]any{pf: sp, rf: roles} {
		b, err := json.MarshalIndent(v, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Load(pf, rf, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	// the Go side reads the very files the oracle read
	data, err := os.ReadFile(pf)
	if err != nil {
		t.Fatal(err)
	}
	gsp, err := ParseServicePolicies(data)
	if err != nil {
		t.Fatal(err)
	}
	rdata, _ := os.ReadFile(rf)
	groles, err := ParseRoles(rdata)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(gsp, groles, EngineOptions{Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	lines := make([]string, len(cases))
	for i, q := range cases {
		lines[i] = caseLine(q)
	}
	answers, err := o.Decide(lines, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for i, q := range cases {
		d := e.Decide(&q)
		f := strings.SplitN(answers[i], "\t", 2)
		if len(f) != 2 {
			t.Fatalf("oracle answer %q", answers[i])
		}
		jid, _ := strconv.ParseInt(f[1], 10, 64)
		jallowed := f[0] == "A"
		// For "any access" Ranger names the first allowing policy its
		// resource index happens to return (the decision itself does not
		// depend on that index); the policy is compared for every other case.
		if jallowed != d.Allowed || (jid != d.PolicyID && q.Access != AccessAny) {
			bad = append(bad, fmt.Sprintf("case %q: java %v by %d, go %v by %d (%s)", lines[i], jallowed, jid, d.Allowed, d.PolicyID, d.Reason))
		}
	}
	return len(cases), bad
}

// TestOracleAgreement: generated policy sets and requests, every answer the
// same as Ranger's Java engine.
func TestOracleAgreement(t *testing.T) {
	o := startOracle(t)
	dir := t.TempDir()
	sets, perSet := 100, 300
	if testing.Short() {
		sets = 10
	}
	total, failed := 0, 0
	var examples []string
	start := time.Now()
	for s := 0; s < sets; s++ {
		r := rand.New(rand.NewSource(int64(1000 + s)))
		sp := genPolicySet(t, r, 3+r.Intn(12))
		roles := genRolesDoc(r)
		cases := make([]Request, perSet)
		for i := range cases {
			cases[i] = genCase(r)
		}
		n, bad := agreement(t, o, dir, sp, roles, cases)
		total += n
		failed += len(bad)
		if len(bad) > 0 && len(examples) < 12 {
			b, _ := json.Marshal(sp)
			examples = append(examples, fmt.Sprintf("set %d (%d disagreements), policies %s", s, len(bad), b))
			examples = append(examples, bad[:min(4, len(bad))]...)
		}
	}
	t.Logf("Ranger oracle agreement: %d of %d cases (%d policy sets) in %v", total-failed, total, sets, time.Since(start).Round(time.Millisecond))
	if failed > 0 {
		t.Fatalf("%d of %d cases disagree with Ranger's engine:\n%s", failed, total, strings.Join(examples, "\n"))
	}
}

// FuzzOracle runs more generated policy sets: go test -fuzz FuzzOracle.
func FuzzOracle(f *testing.F) {
	for _, s := range []int64{1, 2, 3, 42} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed int64) {
		o := startOracle(t)
		r := rand.New(rand.NewSource(seed))
		sp := genPolicySet(t, r, 1+r.Intn(16))
		roles := genRolesDoc(r)
		cases := make([]Request, 100)
		for i := range cases {
			cases[i] = genCase(r)
		}
		if _, bad := agreement(t, o, t.TempDir(), sp, roles, cases); len(bad) > 0 {
			b, _ := json.Marshal(sp)
			t.Fatalf("%d disagreements with Ranger's engine, policies %s:\n%s", len(bad), b, strings.Join(bad[:min(6, len(bad))], "\n"))
		}
	})
}

// TestOracleOperatorPolicies: the hand-written cases of TestOperatorPolicies,
// on the hand-written policy files, answered by Ranger's Java engine.
func TestOracleOperatorPolicies(t *testing.T) {
	o := startOracle(t)
	pf, _ := filepath.Abs("testdata/hms_hive-policies.json")
	rf, _ := filepath.Abs("testdata/hms_hive-roles.json")
	if err := o.Load(pf, rf, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	lines := make([]string, len(operatorCases))
	for i, c := range operatorCases {
		q := c.req
		q.Time = at
		lines[i] = caseLine(q)
	}
	answers, err := o.Decide(lines, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range operatorCases {
		want := "D\t" + strconv.FormatInt(c.policy, 10)
		if c.allow {
			want = "A\t" + strconv.FormatInt(c.policy, 10)
		}
		if c.req.Access == AccessAny {
			want = want[:1]
			answers[i] = answers[i][:1]
		}
		if answers[i] != want {
			t.Errorf("%s: Ranger's engine answers %q, the test expects %q", c.name, answers[i], want)
		}
	}
}
