package restcatalog

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/restcatalog/icemeta"
	"github.com/hms-proxy/hms-proxy/router"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Error is a REST error: the HTTP status, the error type of the Iceberg REST
// ErrorModel (e.g. NoSuchTableException) and a message for the operator. It
// never carries a stack trace: this listener may be reachable without
// authentication.
type Error struct {
	Code    int
	Type    string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Code, e.Type, e.Message) }

// Error types of the REST specification, by the status they answer with.
const (
	typeBadRequest        = "BadRequestException"
	typeIllegalArgument   = "IllegalArgumentException" // a 400 the Java client rethrows as IllegalArgumentException
	typeNotAuthorized     = "NotAuthorizedException"
	typeForbidden         = "ForbiddenException"
	typeNoSuchCatalog     = "NoSuchCatalogException"
	typeNoSuchNamespace   = "NoSuchNamespaceException"
	typeNoSuchTable       = "NoSuchTableException"
	typeNoSuchView        = "NoSuchViewException"
	typeNotFound          = "NotFoundException"
	typeMethodNotAllowed  = "MethodNotAllowedException"
	typeUnsupported       = "UnsupportedOperationException"
	typeAlreadyExists     = "AlreadyExistsException"
	typeNamespaceNotEmpty = "NamespaceNotEmptyException"
	typeCommitFailed      = "CommitFailedException"
	typeTooLarge          = "RequestTooLargeException"
	typeMediaType         = "UnsupportedMediaTypeException"
	typeUnprocessable     = "UnprocessableEntityException"
	typeCommitUnknown     = "CommitStateUnknownException"
	typeInternal          = "InternalServerError"
	typeUnavailable       = "ServiceUnavailableException"
	typeTooManyRequests   = "TooManyRequestsException"

	// oauthInvalidRequest is the OAuth2 error code (RFC 6749) of the token
	// endpoint's answer, written in OAuth2's error form.
	oauthInvalidRequest = "invalid_request"
)

func errorf(code int, typ, format string, args ...any) *Error {
	return &Error{Code: code, Type: typ, Message: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *Error {
	return errorf(http.StatusBadRequest, typeBadRequest, format, args...)
}

// metadataError is the 400 of metadata a request cannot build: an
// icemeta.ArgumentError keeps its text and answers IllegalArgumentException
// (what Iceberg's own catalogs throw, and clients match), anything else is a
// BadRequestException saying what could not be built.
func metadataError(err error, format string, args ...any) *Error {
	var ae *icemeta.ArgumentError
	if errors.As(err, &ae) {
		return errorf(http.StatusBadRequest, typeIllegalArgument, "%s", ae.Msg)
	}
	return badRequest("%s: %v", fmt.Sprintf(format, args...), err)
}

func forbidden(format string, args ...any) *Error {
	return errorf(http.StatusForbidden, typeForbidden, format, args...)
}

func commitFailed(format string, args ...any) *Error {
	return errorf(http.StatusConflict, typeCommitFailed, format, args...)
}

func alreadyExists(format string, args ...any) *Error {
	return errorf(http.StatusConflict, typeAlreadyExists, format, args...)
}

// existsError is the 409 of a create whose name is taken: "View already
// exists" when the kind created (Table or View) is the one found, "View with
// same name already exists" when it is the other, as Iceberg's catalogs say.
func existsError(creating, found, ns, name string) *Error {
	if creating == found {
		return alreadyExists("%s already exists: %s.%s", found, ns, name)
	}
	return alreadyExists("%s with same name already exists: %s.%s", found, ns, name)
}

func noSuchNamespace(ns string) *Error {
	return errorf(http.StatusNotFound, typeNoSuchNamespace, "Namespace does not exist: %s", ns)
}

func noSuchTable(ns, tbl string) *Error {
	return errorf(http.StatusNotFound, typeNoSuchTable, "Table does not exist: %s.%s", ns, tbl)
}

func noSuchView(ns, view string) *Error {
	return errorf(http.StatusNotFound, typeNoSuchView, "View does not exist: %s.%s", ns, view)
}

// errorModel is the JSON body of every error answer
// ({"error":{"message","type","code"}}).
type errorModel struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    int    `json:"code"`
	} `json:"error"`
}

// Markers in the MetaException texts the proxy's router answers with. The
// REST frontend reaches the router over an in-process Thrift connection, so
// the router's typed errors (ErrPoolExhausted, ErrBudgetExceeded, refusals
// with a Reason) arrive as MetaException messages: their text is all that
// crosses. The markers are the router's own sentinel texts where it has
// them, and the fixed phrases of its refusals otherwise; the e2e tests
// (e2e/rest_catalog_test.go) assert the mapping against a real
// stopped metastore and the router's real access-mode refusal.
var (
	// unavailableMarkers: the router could not reach or use the catalog's
	// backend: a failed call ("catalog c backend failed for m"), a
	// connection that could not be opened (also inside a fan-out's
	// refusal), a pool without a free session, the latency budget spent, a
	// circuit breaker failing calls fast (router/breaker.OpenError).
	unavailableMarkers = []string{" backend failed for ", "cannot connect to any metastore URI",
		router.ErrPoolExhausted.Error(), router.ErrBudgetExceeded.Error(), router.ErrBadReply.Error(), "timed out",
		"circuit breaker OPEN", "circuit breaker HALF_OPEN", router.RangerNotReady}
	// forbiddenMarkers: a policy of the proxy refused the call (access
	// modes, write whitelists, refused RPCs, a create of a name the
	// exposure rules hide, an access the Ranger policies deny).
	forbiddenMarkers = []string{"is READ_ONLY (catalog.", "write-db-whitelist", "is refused by hms-proxy", "is not forwarded by hms-proxy",
		"is hidden by the exposure rules", router.RangerDenied}
	// throttledMarkers: the router's rate limit (rate-limit.*) refused
	// the call: 429, which Iceberg's clients retry with backoff.
	throttledMarkers = []string{"rate limit exceeded for "}
	// conflictMarkers: Hive 4's alter_table compare-and-swap on a
	// parameter (expected_parameter_key/value) found another value.
	conflictMarkers = []string{"The table has been modified", "has been modified concurrently"}
)

func containsAny(s string, markers []string) bool {
	for _, m := range markers {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// metastoreError maps an error of a metastore call to a REST error. what
// names the object ("table sales.orders") and notFound is the error for a
// NoSuchObjectException (nil: 404 NotFoundException naming what).
func metastoreError(err error, what string, notFound *Error) *Error {
	var re *Error
	if errors.As(err, &re) {
		return re
	}
	var (
		nso *thriftgen.NoSuchObjectException
		ae  *thriftgen.AlreadyExistsException
		ioe *thriftgen.InvalidObjectException
		iop *thriftgen.InvalidOperationException
		udb *thriftgen.UnknownDBException
		utb *thriftgen.UnknownTableException
		me  *thriftgen.MetaException
		nsl *thriftgen.NoSuchLockException
		tae thrift.TApplicationException
		tte thrift.TTransportException
		ne  net.Error
	)
	switch {
	case errors.As(err, &nso), errors.As(err, &utb):
		if notFound != nil {
			return notFound
		}
		return errorf(http.StatusNotFound, typeNotFound, "%s does not exist: %s", what, exceptionText(err))
	case errors.As(err, &udb):
		if notFound != nil && notFound.Type == typeNoSuchNamespace {
			return notFound
		}
		return errorf(http.StatusNotFound, typeNoSuchNamespace, "%s: %s", what, exceptionText(err))
	case errors.As(err, &ae):
		return alreadyExists("%s already exists: %s", what, exceptionText(err))
	case errors.As(err, &ioe):
		return badRequest("metastore refused %s as invalid: %s", what, exceptionText(err))
	case errors.As(err, &iop):
		return badRequest("metastore refused the operation on %s: %s", what, exceptionText(err))
	case errors.As(err, &nsl):
		return commitFailed("metastore lock for %s was lost: %s", what, exceptionText(err))
	case errors.As(err, &me):
		msg := exceptionText(err)
		switch {
		case containsAny(msg, conflictMarkers):
			return commitFailed("%s was modified concurrently: %s", what, msg)
		case containsAny(msg, forbiddenMarkers):
			return forbidden("%s: %s", what, msg)
		case containsAny(msg, throttledMarkers):
			return errorf(http.StatusTooManyRequests, typeTooManyRequests, "%s: %s", what, msg)
		case containsAny(msg, unavailableMarkers):
			return errorf(http.StatusServiceUnavailable, typeUnavailable, "metastore unavailable for %s: %s", what, msg)
		}
		return errorf(http.StatusInternalServerError, typeInternal, "metastore failed for %s: %s", what, msg)
	case errors.As(err, &tae):
		// A refusal of an RPC that declares no MetaException (lock, for
		// one) reaches a client as an application error: a policy is still
		// a 403.
		if containsAny(tae.Error(), forbiddenMarkers) {
			return forbidden("%s: %s", what, tae.Error())
		}
		if containsAny(tae.Error(), throttledMarkers) {
			return errorf(http.StatusTooManyRequests, typeTooManyRequests, "%s: %s", what, tae.Error())
		}
		return errorf(http.StatusInternalServerError, typeInternal, "metastore answered %s with an application error: %s", what, tae.Error())
	case errors.As(err, &tte), errors.As(err, &ne), errors.Is(err, context.DeadlineExceeded):
		return errorf(http.StatusServiceUnavailable, typeUnavailable, "metastore unavailable for %s: %v", what, err)
	}
	return errorf(http.StatusServiceUnavailable, typeUnavailable, "metastore call for %s failed: %v", what, err)
}

// exceptionText is the message of a typed HMS exception (their Error()
// strings carry the struct dump).
func exceptionText(err error) string {
	var (
		nso *thriftgen.NoSuchObjectException
		ae  *thriftgen.AlreadyExistsException
		ioe *thriftgen.InvalidObjectException
		iop *thriftgen.InvalidOperationException
		udb *thriftgen.UnknownDBException
		utb *thriftgen.UnknownTableException
		me  *thriftgen.MetaException
		nsl *thriftgen.NoSuchLockException
	)
	switch {
	case errors.As(err, &nso):
		return nso.Message
	case errors.As(err, &ae):
		return ae.Message
	case errors.As(err, &ioe):
		return ioe.Message
	case errors.As(err, &iop):
		return iop.Message
	case errors.As(err, &udb):
		return udb.Message
	case errors.As(err, &utb):
		return utb.Message
	case errors.As(err, &me):
		return me.Message
	case errors.As(err, &nsl):
		return nsl.Message
	}
	return err.Error()
}

// isNoSuchObject reports a NoSuchObjectException (or UnknownTable/UnknownDB).
func isNoSuchObject(err error) bool {
	var (
		nso *thriftgen.NoSuchObjectException
		utb *thriftgen.UnknownTableException
		udb *thriftgen.UnknownDBException
	)
	return errors.As(err, &nso) || errors.As(err, &utb) || errors.As(err, &udb)
}
