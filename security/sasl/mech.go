// Package sasl is Thrift's SASL transport as Hive's TSaslServerTransport and
// TSaslClientTransport frame it: a negotiation of status frames
// (START/OK/BAD/ERROR/COMPLETE), then length-prefixed data frames, wrapped by
// the negotiated security layer when the quality of protection is above
// "auth". Mechanisms (GSSAPI, DIGEST-MD5) plug in through the interfaces
// below, so the transport knows nothing of Kerberos or tokens.
package sasl

// QOP is a negotiated quality of protection, as javax.security.sasl names it.
type QOP string

// Qualities of protection (hadoop.rpc.protection authentication, integrity,
// privacy).
const (
	QOPAuth     QOP = "auth"
	QOPAuthInt  QOP = "auth-int"
	QOPAuthConf QOP = "auth-conf"
)

// Layer is the security layer a mechanism negotiated: it protects each data
// frame of the connection. A nil Layer means "auth": frames travel as they are.
// Wrap and Unwrap are called from one goroutine per direction; an
// implementation keeps its own sequence numbers per direction.
type Layer interface {
	Wrap(plain []byte) ([]byte, error)
	Unwrap(token []byte) ([]byte, error)
}

// Result is what a server mechanism established about its peer.
type Result struct {
	// Mechanism is the SASL mechanism name ("GSSAPI", "DIGEST-MD5").
	Mechanism string
	// Principal is the authenticated name: a Kerberos principal
	// ("alice@EXAMPLE.COM") or, for a delegation token, its owner.
	Principal string
	// RealUser, for a delegation token, is the real user that obtained it for
	// Principal (empty otherwise).
	RealUser string
	// AuthzID is the authorization id the client asked for ("" when none).
	AuthzID string
	QOP     QOP
	Layer   Layer
}

// ServerMech is one server-side mechanism instance, used for one handshake.
type ServerMech interface {
	// Name is the SASL mechanism name it answers to.
	Name() string
	// Step takes the client's next response (the initial response first,
	// possibly empty) and returns the challenge to send. When done is true
	// the exchange is complete: challenge (possibly empty) goes out with
	// COMPLETE and Result is valid. An error ends the handshake; its text is
	// sent to the client in a BAD frame, so it must not leak secrets.
	Step(response []byte) (challenge []byte, done bool, err error)
	Result() Result
}

// ServerMechFactory makes a fresh ServerMech per connection.
type ServerMechFactory func() (ServerMech, error)

// ClientMech is one client-side mechanism instance (outbound Kerberos to a
// backend, DIGEST-MD5 with a delegation token).
type ClientMech interface {
	Name() string
	// Start returns the initial response sent after START (may be empty).
	Start() ([]byte, error)
	// Step takes the server's challenge and returns the next response; done
	// reports that the client side is complete.
	Step(challenge []byte) (response []byte, done bool, err error)
	// Layer is the negotiated layer once done (nil for auth).
	Layer() Layer
}
