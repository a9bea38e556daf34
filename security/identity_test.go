package security

import (
	"context"
	"testing"
)

func TestIdentityTravelsInTheContext(t *testing.T) {
	if FromContext(context.Background()) != nil {
		t.Fatal("an empty context carries no identity")
	}
	id := &Identity{User: "alice", Groups: []string{"etl"}, Mechanism: SetUGI}
	got := FromContext(WithIdentity(context.Background(), id))
	if got != id || got.Name() != "alice" {
		t.Fatalf("got %+v", got)
	}
	if id.Authenticated() {
		t.Fatal("a set_ugi assertion is not authentication")
	}
	var none *Identity
	if none.Name() != "" || none.Authenticated() {
		t.Fatal("nil identity must read as anonymous")
	}
}
