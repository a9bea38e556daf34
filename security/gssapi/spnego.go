package gssapi

import (
	"encoding/base64"
	"fmt"

	"github.com/jcmturner/gofork/encoding/asn1"
	krbgssapi "github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/spnego"
)

// NegotiateHeader is the value of an HTTP "Authorization: Negotiate ..."
// header (RFC 4559) for the service principal spn ("HTTP/host", in the
// login's realm): an SPNEGO NegTokenInit carrying the same Kerberos AP-REQ
// the SASL initiator sends. Each call builds a fresh authenticator (Kerberos
// replay caches refuse a repeated one); the service ticket is reused while it
// is valid.
func (l *Login) NegotiateHeader(spn string) (string, error) {
	tkt, key, err := l.ServiceTicket(spn, l.realm)
	if err != nil {
		return "", err
	}
	cname, crealm, err := l.credentials()
	if err != nil {
		return "", err
	}
	tok, _, err := buildAPReq(tkt, key, cname, crealm)
	if err != nil {
		return "", fmt.Errorf("gssapi: building the AP-REQ for %s@%s: %w", spn, l.realm, err)
	}
	st := spnego.SPNEGOToken{Init: true, NegTokenInit: spnego.NegTokenInit{
		MechTypes:      []asn1.ObjectIdentifier{krbgssapi.OIDKRB5.OID()},
		MechTokenBytes: tok,
	}}
	b, err := st.Marshal()
	if err != nil {
		return "", fmt.Errorf("gssapi: encoding the SPNEGO token for %s: %w", spn, err)
	}
	return "Negotiate " + base64.StdEncoding.EncodeToString(b), nil
}

// Realm is the realm of the login's principal.
func (l *Login) Realm() string { return l.realm }
