package codegen

import (
	"fmt"
	"strings"
)

func (g *gen) clientFile() (string, error) {
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("package thriftgen\n\nimport (\n\t\"context\"\n\n\t\"github.com/apache/thrift/lib/go/thrift\"\n)\n\n")
	b.WriteString(`// Client calls the canonical HMS API (ThriftHiveMetastore and fb303's FacebookService) through a thrift.TClient,
// e.g. thrift.NewTStandardClient over a buffered socket with TBinaryProtocol, as HMS serves. Every method sends
// its RPC as it is; one the peer does not have is answered by the peer (a TApplicationException
// UNKNOWN_METHOD). A declared exception comes back as its typed error (e.g. *NoSuchObjectException); a reply
// with neither result nor exception as a TApplicationException MISSING_RESULT. To talk to a peer whose wire ids
// differ (HDP 3.1.5's Table), pass a context from WithWireProfile.
type Client struct {
	c thrift.TClient
}

// NewClient returns a Client calling through c.
func NewClient(c thrift.TClient) *Client { return &Client{c: c} }

// TClient returns the thrift.TClient the Client calls through.
func (c *Client) TClient() thrift.TClient { return c.c }

`)
	for _, m := range g.s.Methods {
		args := g.plans[m.Args]
		var params, assigns []string
		seen := map[string]bool{}
		for _, fp := range args.fields {
			pn := lowerCamel(fp.f.Name)
			if goKeywords[pn] || clientLocals[pn] {
				pn += "_"
			}
			if seen[pn] {
				return "", fmt.Errorf("method %s: two parameters named %s", m.Name, pn)
			}
			seen[pn] = true
			params = append(params, pn+" "+fp.goType())
			assigns = append(assigns, fp.goName+": "+pn)
		}
		if args.tracked {
			assigns = append(assigns, "present: ^fieldSet(0)")
		}
		retType, retExpr, retCheck := "", "", ""
		var exceptions []*fieldPlan
		if m.Result != "" {
			for _, fp := range g.plans[m.Result].fields {
				if fp.f.ID == 0 {
					retType = fp.valType
					if fp.mode == modePtr {
						retExpr, retCheck = "*res.Success", "res.Success == nil"
					} else {
						retExpr, retCheck = "res.Success", "res.Success == nil"
					}
				} else {
					exceptions = append(exceptions, fp)
				}
			}
		}
		fmt.Fprintf(&b, "// %s calls %s", g.methodGo[m.Name], m.Name)
		if m.Service != "ThriftHiveMetastore" {
			fmt.Fprintf(&b, " of %s", m.Service)
		}
		if m.Oneway {
			b.WriteString(" (oneway: no reply is read)")
		}
		if note := profilesNote(m.Profiles); note != "" {
			fmt.Fprintf(&b, "; profiles: %s", note)
		}
		b.WriteString(".\n")
		sig := "ctx context.Context"
		if len(params) > 0 {
			sig += ", " + strings.Join(params, ", ")
		}
		ret := "(err error)"
		if retType != "" {
			ret = "(r " + retType + ", err error)"
		}
		fmt.Fprintf(&b, "func (c *Client) %s(%s) %s {\n", g.methodGo[m.Name], sig, ret)
		fmt.Fprintf(&b, "\targs := &%s{%s}\n", g.structGo[m.Args], strings.Join(assigns, ", "))
		if m.Oneway {
			fmt.Fprintf(&b, "\t_, err = c.c.Call(ctx, %q, args, nil)\n\treturn err\n}\n\n", m.Name)
			continue
		}
		fmt.Fprintf(&b, "\tvar res %s\n", g.structGo[m.Result])
		fmt.Fprintf(&b, "\tif _, err = c.c.Call(ctx, %q, args, &res); err != nil {\n\t\treturn\n\t}\n", m.Name)
		zero := "r, "
		if retType == "" {
			zero = ""
		}
		for _, ex := range exceptions {
			fmt.Fprintf(&b, "\tif res.%s != nil {\n\t\treturn %sres.%s\n\t}\n", ex.goName, zero, ex.goName)
		}
		if retType != "" {
			fmt.Fprintf(&b, "\tif %s {\n\t\treturn r, missingResult(%q)\n\t}\n\treturn %s, nil\n}\n\n", retCheck, m.Name, retExpr)
		} else {
			b.WriteString("\treturn nil\n}\n\n")
		}
	}
	return b.String(), nil
}
