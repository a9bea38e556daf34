// Package security holds the proxy's security boundary. Today: the caller's
// identity as the rest of the pipeline sees it. The Kerberos/SASL front door,
// outbound Kerberos, impersonation and delegation tokens of later issues
// produce and consume the same Identity, so the router, audit and policy
// code does not change when they land.
package security

import "context"

// Mechanism says how an identity was established.
type Mechanism string

// Mechanisms.
const (
	// Anonymous: nothing was asserted (plain TCP, no set_ugi yet).
	Anonymous Mechanism = "none"
	// SetUGI: the client asserted a user with set_ugi; unauthenticated, as
	// on a metastore without SASL.
	SetUGI Mechanism = "set_ugi"
	// Kerberos: the front door's SASL GSSAPI verified a Kerberos ticket; User
	// is the principal mapped by auth_to_local.
	Kerberos Mechanism = "kerberos"
	// Token: SASL DIGEST-MD5 with a delegation token; User is its owner.
	Token Mechanism = "token"
	// OAuth2: an OAuth2 bearer token (a JWT of an identity provider) on the
	// Iceberg REST listener; User is its configured claim.
	OAuth2 Mechanism = "oauth2"
)

// Identity is who a request runs for. It is immutable once published: a
// connection that changes identity publishes a new value.
type Identity struct {
	User      string
	Groups    []string
	Mechanism Mechanism
	// Principal is the authenticated name before auth_to_local mapping: the
	// Kerberos principal, or a delegation token's owner ("" for set_ugi).
	Principal string
	// RealUser is, for a delegation token obtained by a service for User,
	// that service ("" otherwise).
	RealUser string
}

// Authenticated reports whether a front-door mechanism proved the user
// (SASL); a set_ugi assertion is not proof.
func (i *Identity) Authenticated() bool {
	return i != nil && i.Mechanism != Anonymous && i.Mechanism != SetUGI
}

// Name is the user for logs and audit records ("" when anonymous).
func (i *Identity) Name() string {
	if i == nil {
		return ""
	}
	return i.User
}

type ctxKey struct{}

// WithIdentity returns a context carrying id.
func WithIdentity(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// FromContext returns the identity in ctx, nil when there is none.
func FromContext(ctx context.Context) *Identity {
	id, _ := ctx.Value(ctxKey{}).(*Identity)
	return id
}
