package codegen

import (
	"fmt"
	"strings"

	"github.com/hms-proxy/hms-proxy/thriftgen/internal/schema"
)

func (g *gen) typesFile() (string, error) {
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("package thriftgen\n\nimport (\n\t\"context\"\n\t\"strconv\"\n\n\t\"github.com/apache/thrift/lib/go/thrift\"\n)\n\n")

	// enums
	for _, n := range sortedKeys(g.s.Enums) {
		e := g.s.Enums[n]
		gn := g.enumGo[n]
		fmt.Fprintf(&b, "// %s is the Thrift enum %s", gn, n)
		if note := profilesNote(e.Profiles); note != "" {
			fmt.Fprintf(&b, " (profiles: %s)", note)
		}
		b.WriteString(". Values the schema does not know are kept as they are.\n")
		fmt.Fprintf(&b, "type %s int32\n\n", gn)
		b.WriteString("const (\n")
		for _, v := range e.Values {
			fmt.Fprintf(&b, "\t%s_%s %s = %d", gn, v.Name, gn, v.Value)
			if note := profilesNote(v.Profiles); note != "" {
				fmt.Fprintf(&b, " // %s", note)
			}
			b.WriteString("\n")
		}
		b.WriteString(")\n\n")
		fmt.Fprintf(&b, "// String returns the value's Thrift name, or %s(<number>) for a value the schema does not know.\n", gn)
		fmt.Fprintf(&b, "func (v %s) String() string {\n\tswitch v {\n", gn)
		for _, v := range e.Values {
			fmt.Fprintf(&b, "\tcase %s_%s:\n\t\treturn %q\n", gn, v.Name, v.Name)
		}
		fmt.Fprintf(&b, "\t}\n\treturn \"%s(\" + strconv.Itoa(int(v)) + \")\"\n}\n\n", gn)
	}

	// containers
	b.WriteString("// readers and writers of the schema's container types\n\n")
	for _, m := range g.sortedContainers() {
		t := g.containers[m]
		gt := g.goType(t)
		var rd, wr string
		switch t.Kind {
		case "list", "set":
			fn := map[string]string{"list": "List", "set": "Set"}[t.Kind]
			rd = fmt.Sprintf("read%s(ctx, p, %s, %s)", fn, ttype(t.Elem), g.readerExpr(t.Elem))
			wr = fmt.Sprintf("write%s(ctx, p, %s, %s, v)", fn, ttype(t.Elem), g.writerExpr(t.Elem))
		case "map":
			fn := "Map"
			if !orderedKey(t.Key) {
				fn = "Entries"
			}
			rd = fmt.Sprintf("read%s(ctx, p, %s, %s, %s, %s)", fn, ttype(t.Key), ttype(t.Value), g.readerExpr(t.Key),
				g.readerExpr(t.Value))
			wr = fmt.Sprintf("write%s(ctx, p, %s, %s, %s, %s, v)", fn, ttype(t.Key), ttype(t.Value),
				g.writerExpr(t.Key), g.writerExpr(t.Value))
		}
		fmt.Fprintf(&b, "func read%s(ctx context.Context, p thrift.TProtocol) (%s, error) {\n\treturn %s\n}\n\n", m, gt, rd)
		fmt.Fprintf(&b, "func write%s(ctx context.Context, p thrift.TProtocol, v %s) error {\n\treturn %s\n}\n\n", m, gt, wr)
	}

	// structs
	for _, n := range sortedKeys(g.s.Structs) {
		if err := g.writeStruct(&b, g.plans[n]); err != nil {
			return "", err
		}
	}

	// factory
	b.WriteString("// NewStruct returns a new, empty value of the Go type of the named schema struct (any struct, union,\n")
	b.WriteString("// exception, <method>_args or <method>_result), or nil if there is none.\n")
	b.WriteString("func NewStruct(name string) thrift.TStruct {\n\tswitch name {\n")
	for _, n := range sortedKeys(g.s.Structs) {
		fmt.Fprintf(&b, "\tcase %q:\n\t\treturn &%s{}\n", n, g.structGo[n])
	}
	b.WriteString("\t}\n\treturn nil\n}\n")
	return b.String(), nil
}

func (g *gen) writeStruct(b *strings.Builder, sp *structPlan) error {
	st := sp.st
	gn := sp.goName
	what := "Thrift " + st.Kind + " " + sp.name
	if sp.method != nil {
		if sp.result {
			what = "result struct " + sp.name + " of " + sp.method.Name
		} else {
			what = "argument struct " + sp.name + " of " + sp.method.Name
		}
	}
	fmt.Fprintf(b, "// %s is the %s", gn, what)
	if note := profilesNote(st.Profiles); note != "" {
		fmt.Fprintf(b, " (profiles: %s)", note)
	}
	b.WriteString(".\n")
	if sp.dialect {
		var ps []string
		for _, p := range schema.SortProfiles(sortedKeys(g.s.Dialects)) {
			if g.s.Dialects[p][sp.name] != nil {
				ps = append(ps, p)
			}
		}
		fmt.Fprintf(b, "// Its wire ids differ in %s: see Dialect and WithWireProfile.\n", strings.Join(ps, ", "))
	}
	if sp.tracked {
		b.WriteString("// Default-requiredness string and enum fields are sent when non-zero or present when read (see MarkPresent).\n")
	}
	fmt.Fprintf(b, "type %s struct {\n", gn)
	for _, fp := range sp.fields {
		f := fp.f
		fmt.Fprintf(b, "\t%s %s // %d: %s %s %s", fp.goName, fp.goType(), f.ID, f.Required, f.Type, f.Name)
		if note := profilesNote(f.Profiles); note != "" {
			fmt.Fprintf(b, "; profiles: %s", note)
		}
		if len(f.RequiredIn) > 0 {
			fmt.Fprintf(b, "; required in %s", strings.Join(f.RequiredIn, ", "))
		}
		b.WriteString("\n")
	}
	if sp.tracked {
		b.WriteString("\n\tpresent fieldSet\n")
	}
	b.WriteString("}\n\n")

	dl := "nil"
	if sp.dialect {
		dl = fmt.Sprintf("wireDialect(ctx, %q)", sp.name)
	}
	fmt.Fprintf(b, "// Read reads the %s from p; unknown fields are skipped.\n", sp.name)
	fmt.Fprintf(b, "func (s *%s) Read(ctx context.Context, p thrift.TProtocol) error {\n", gn)
	fmt.Fprintf(b, "\treturn readStruct(ctx, p, %q, %s, func(ctx context.Context, id int16, tt thrift.TType) (bool, error) {\n",
		sp.name, dl)
	if len(sp.fields) > 0 {
		b.WriteString("\t\tswitch id {\n")
		for _, fp := range sp.fields {
			fmt.Fprintf(b, "\t\tcase %d:\n\t\t\treturn ", fp.f.ID)
			switch fp.mode {
			case modeValue, modeNil:
				fmt.Fprintf(b, "rf(ctx, p, tt, %s, &s.%s, %s)\n", fp.tt, fp.goName, fp.reader)
			case modeTracked:
				fmt.Fprintf(b, "rfSet(ctx, p, tt, %s, &s.%s, %s, &s.present, 1<<%d)\n", fp.tt, fp.goName, fp.reader, fp.index)
			case modePtr:
				fmt.Fprintf(b, "rfPtr(ctx, p, tt, %s, &s.%s, %s)\n", fp.tt, fp.goName, fp.reader)
			}
		}
		b.WriteString("\t\t}\n")
	}
	b.WriteString("\t\treturn false, nil\n\t})\n}\n\n")

	fmt.Fprintf(b, "// Write writes the %s to p.\n", sp.name)
	fmt.Fprintf(b, "func (s *%s) Write(ctx context.Context, p thrift.TProtocol) error {\n", gn)
	fmt.Fprintf(b, "\tw := beginWrite(ctx, p, %q, %s)\n", sp.name, dl)
	for _, fp := range sp.fields {
		f := fp.f
		switch fp.mode {
		case modeValue:
			fmt.Fprintf(b, "\twf(&w, true, %d, %q, %s, s.%s, %s)\n", f.ID, f.Name, fp.tt, fp.goName, fp.writer)
		case modeTracked:
			zero := `""`
			if f.Type.Kind == "enum" {
				zero = "0"
			}
			fmt.Fprintf(b, "\twf(&w, s.%s != %s || s.present&(1<<%d) != 0, %d, %q, %s, s.%s, %s)\n", fp.goName, zero,
				fp.index, f.ID, f.Name, fp.tt, fp.goName, fp.writer)
		case modeNil:
			fn := "wf"
			if fp.required {
				fn = "wfReq"
			}
			fmt.Fprintf(b, "\t%s(&w, s.%s != nil, %d, %q, %s, s.%s, %s)\n", fn, fp.goName, f.ID, f.Name, fp.tt,
				fp.goName, fp.writer)
		case modePtr:
			fmt.Fprintf(b, "\twfPtr(&w, %d, %q, %s, s.%s, %s)\n", f.ID, f.Name, fp.tt, fp.goName, fp.writer)
		}
	}
	b.WriteString("\treturn w.end()\n}\n\n")

	if sp.tracked {
		b.WriteString("// MarkPresent makes Write send the default-requiredness string or enum field with the given id even\n")
		b.WriteString("// when it holds \"\" or 0 (as Java sends a non-null empty value); it reports whether id is such a field.\n")
		fmt.Fprintf(b, "func (s *%s) MarkPresent(id int16) bool {\n\tswitch id {\n", gn)
		for _, fp := range sp.fields {
			if fp.mode == modeTracked {
				fmt.Fprintf(b, "\tcase %d:\n\t\ts.present |= 1 << %d\n", fp.f.ID, fp.index)
			}
		}
		b.WriteString("\tdefault:\n\t\treturn false\n\t}\n\treturn true\n}\n\n")
	}

	if st.Kind == schema.KindException {
		msg := ""
		for _, fp := range sp.fields {
			if fp.f.Name == "message" && fp.f.Type.Kind == "string" {
				msg = fp.goName
				if fp.mode == modePtr {
					msg = "*" + msg
				}
			}
		}
		fmt.Fprintf(b, "// Error returns %s(message:<message>), as Java's toString.\n", sp.name)
		fmt.Fprintf(b, "func (s *%s) Error() string {\n", gn)
		switch {
		case msg == "":
			fmt.Fprintf(b, "\treturn %q\n", sp.name+"()")
		case strings.HasPrefix(msg, "*"):
			fmt.Fprintf(b, "\tif s.%s == nil {\n\t\treturn %q\n\t}\n\treturn %q + %s + \")\"\n", msg[1:],
				sp.name+"(message:null)", sp.name+"(message:", "*s."+msg[1:])
		default:
			fmt.Fprintf(b, "\treturn %q + s.%s + \")\"\n", sp.name+"(message:", msg)
		}
		b.WriteString("}\n\n")
		b.WriteString("// TExceptionType marks the exception as declared in the IDL (a Thrift user exception).\n")
		fmt.Fprintf(b, "func (s *%s) TExceptionType() thrift.TExceptionType { return thrift.TExceptionTypeCompiled }\n\n", gn)
	}
	return nil
}
