package guards

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/hms-proxy/hms-proxy/wire"
)

// TxnMode is guard.transactional-ddl.mode.
type TxnMode uint8

const (
	// TxnOff: the guard is not configured.
	TxnOff TxnMode = iota
	// TxnReject: REJECT_TRANSACTIONAL.
	TxnReject
	// TxnRewrite: REWRITE_TRANSACTIONAL_TO_EXTERNAL.
	TxnRewrite
)

// Config values of guard.transactional-ddl.mode.
const (
	TxnModeReject  = "REJECT_TRANSACTIONAL"
	TxnModeRewrite = "REWRITE_TRANSACTIONAL_TO_EXTERNAL"
)

// ParseTxnMode reads guard.transactional-ddl.mode; "" is off.
func ParseTxnMode(s string) (TxnMode, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "":
		return TxnOff, nil
	case TxnModeReject:
		return TxnReject, nil
	case TxnModeRewrite:
		return TxnRewrite, nil
	}
	return 0, fmt.Errorf("guard.transactional-ddl.mode=%q: want %s or %s", s, TxnModeReject, TxnModeRewrite)
}

// TxnOptions configure the transactional DDL guard.
type TxnOptions struct {
	Mode TxnMode
	// ClientAddresses: guard.transactional-ddl.client-addresses, IPs and
	// CIDRs (v4 and v6). Empty: the guard applies to every client.
	ClientAddresses []string
}

// TxnGuard is the transactional DDL guard.
type TxnGuard struct {
	mode TxnMode
	nets []netip.Prefix
}

// NewTxnGuard validates the options. An address list without a mode is an
// error (a guard that is configured but would not run).
func NewTxnGuard(o TxnOptions) (*TxnGuard, error) {
	g := &TxnGuard{mode: o.Mode}
	for _, a := range o.ClientAddresses {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		var p netip.Prefix
		var err error
		if strings.Contains(a, "/") {
			p, err = netip.ParsePrefix(a)
			if err == nil && p.Masked() != p {
				err = fmt.Errorf("host bits set (did you mean %s?)", p.Masked())
			}
		} else {
			var ad netip.Addr
			ad, err = netip.ParseAddr(a)
			if err == nil {
				ad = ad.Unmap()
				p = netip.PrefixFrom(ad, ad.BitLen())
			}
		}
		if err != nil {
			return nil, fmt.Errorf("guard.transactional-ddl.client-addresses: %q is not an IP address or CIDR: %v", a, err)
		}
		g.nets = append(g.nets, p)
	}
	if g.mode == TxnOff && len(g.nets) > 0 {
		return nil, fmt.Errorf("guard.transactional-ddl.client-addresses is set but guard.transactional-ddl.mode is not: set the mode (%s or %s) or remove the addresses", TxnModeReject, TxnModeRewrite)
	}
	return g, nil
}

// Enabled reports whether the guard does anything.
func (g *TxnGuard) Enabled() bool { return g != nil && g.mode != TxnOff }

// Applies reports whether the guard applies to a client address (an
// IPv4-mapped IPv6 address matches its IPv4 form).
func (g *TxnGuard) Applies(client netip.Addr) bool {
	if !g.Enabled() {
		return false
	}
	if len(g.nets) == 0 {
		return true
	}
	client = client.Unmap()
	for _, p := range g.nets {
		if p.Contains(client) {
			return true
		}
	}
	return false
}

// TxnAction says what the guard did.
type TxnAction uint8

const (
	// TxnPassed: not a transactional managed table, the guard is off, or the
	// client is not one it applies to.
	TxnPassed TxnAction = iota
	// TxnRewritten: the Table became an external table.
	TxnRewritten
	// TxnRefused: see the error.
	TxnRefused
)

// Refusal is the guard's refusal; the router answers it as a MetaException
// with Error() as its message.
type Refusal struct {
	Method, Table, Rule string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("%s of %s refused by guard.transactional-ddl.mode=%s: %s", r.Method, r.Table, TxnModeReject, r.Rule)
}

// Check applies the guard to every Table in args (the decoded *_args struct
// of method; see TablePaths), rewriting them in place in rewrite mode. A
// method that carries no Table passes.
func (g *TxnGuard) Check(method string, client netip.Addr, args *wire.Value) (TxnAction, error) {
	if !g.Applies(client) {
		return TxnPassed, nil
	}
	act := TxnPassed
	for _, path := range TablePaths(method) {
		tbl := At(args, path)
		if tbl == nil {
			continue
		}
		rule := transactionalRule(tbl)
		if rule == "" {
			continue
		}
		if g.mode == TxnReject {
			return TxnRefused, &Refusal{Method: method, Table: qualified(tbl), Rule: rule}
		}
		toExternal(tbl)
		act = TxnRewritten
	}
	return act, nil
}

// transactionalRule says why tbl is a transactional managed table ("" when
// it is not). A table type left empty is managed unless EXTERNAL=TRUE, as
// the metastore stores it; so is MANAGED_TABLE with EXTERNAL=TRUE external.
func transactionalRule(tbl *wire.Value) string {
	p := params(tbl, false)
	ext, _ := paramFold(p, "EXTERNAL")
	typ := tbl.Field(tblType).String()
	if !(strings.EqualFold(typ, ManagedTable) || typ == "") || strings.EqualFold(ext, "TRUE") {
		return ""
	}
	if v, ok := paramFold(p, "transactional"); ok && strings.EqualFold(strings.TrimSpace(v), "true") {
		return "managed table with transactional=" + v
	}
	if v, ok := paramFold(p, "transactional_properties"); ok && strings.TrimSpace(v) != "" {
		return "managed table with transactional_properties=" + v
	}
	return ""
}

// toExternal rewrites a transactional managed table into an external table
// whose data the metastore deletes on DROP TABLE.
func toExternal(tbl *wire.Value) {
	tbl.Set(tblType, wire.Str(ExternalTable))
	p := params(tbl, true)
	if p == nil { // not a map<string,string>: the router's strict reader never lets one through
		tbl.Set(tblParams, newStringMap())
		p = tbl.Field(tblParams)
	}
	delParamFold(p, "transactional")
	delParamFold(p, "transactional_properties")
	delParamFold(p, "EXTERNAL")
	delParamFold(p, "external.table.purge")
	setParam(p, "EXTERNAL", "TRUE")
	setParam(p, "external.table.purge", "true")
}
