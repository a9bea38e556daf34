package compat

import (
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/wire"
)

// An enum value an older runtime does not know is refused for writes
// rather than coerced (CompactionType.REBALANCE is Hive 4 only).
func TestGuardRefusesUnknownEnumValuesAndFields(t *testing.T) {
	old, _ := Lookup("APACHE_3_1_3")
	g, err := NewGuard(old)
	if err != nil {
		t.Fatal(err)
	}
	req := func(typ int32) []byte {
		r := wire.Struct(wire.Field{ID: fid("CompactionRequest", "dbname"), V: wire.Str("db")},
			wire.Field{ID: fid("CompactionRequest", "tablename"), V: wire.Str("t")},
			wire.Field{ID: fid("CompactionRequest", "type"), V: wire.I32(typ)})
		args := wire.Struct(wire.Field{ID: 1, V: r})
		return args.Encode()
	}
	if err := g.Check("compact2", req(2)); err != nil { // MAJOR: every runtime has it
		t.Fatalf("MAJOR must pass: %v", err)
	}
	err = g.Check("compact2", req(3))
	if err == nil || !strings.Contains(err.Error(), "REBALANCE") || !strings.Contains(err.Error(), "APACHE_3_1_3") {
		t.Fatalf("REBALANCE toward 3.1.3 must be refused naming it, got %v", err)
	}
	// A field 3.1.3 lacks: Database.managedLocationUri.
	db := wire.Struct(wire.Field{ID: fid("Database", "name"), V: wire.Str("d")},
		wire.Field{ID: fid("Database", "managedLocationUri"), V: wire.Str("/m")})
	args := wire.Struct(wire.Field{ID: 1, V: db})
	if err := g.Check("create_database", args.Encode()); err == nil || !strings.Contains(err.Error(), "Database.managedLocationUri") {
		t.Fatalf("managedLocationUri toward 3.1.3 must be refused naming it, got %v", err)
	}
	// A Hive 4 runtime has everything: no check at all.
	h4, _ := Lookup("APACHE_4_1_0")
	g4, _ := NewGuard(h4)
	if err := g4.Check("compact2", req(3)); err != nil {
		t.Fatalf("Hive 4 knows REBALANCE: %v", err)
	}
}
