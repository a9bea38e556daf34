// Package idl is a minimal Thrift IDL reader used only by tests: it turns a hive_metastore.thrift file (and the
// fb303.thrift it includes) into a single-profile schema in the same model the Java extractor produces, so the
// reference IDL copies can be compared with the schema extracted from the real jars and with the HDP delta.
//
// It understands what the metastore IDLs use: include, namespace, const, typedef, enum, struct, union, exception
// and service (with extends, oneway and throws). Like the Thrift compiler it numbers fields without an id -1, -2, …
// within each field list, and builds <method>_args / <method>_result structs the way the Java generator does.
package idl

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/hms-proxy/hms-proxy/thriftgen/internal/schema"
)

type token struct {
	text string
	str  bool // a quoted string literal
	line int
}

func lex(src, file string) ([]token, error) {
	var toks []token
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '#' || (c == '/' && i+1 < len(src) && src[i+1] == '/'):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("%s:%d: unterminated comment", file, line)
			}
			line += strings.Count(src[i:i+2+end], "\n")
			i += end + 4
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(src) {
				return nil, fmt.Errorf("%s:%d: unterminated string", file, line)
			}
			toks = append(toks, token{text: src[i+1 : j], str: true, line: line})
			line += strings.Count(src[i:j], "\n")
			i = j + 1
		case strings.ContainsRune("{}()<>,;:=[]", rune(c)):
			toks = append(toks, token{text: string(c), line: line})
			i++
		case isWord(c) || c == '-' || c == '+':
			j := i + 1
			for j < len(src) && (isWord(src[j]) || src[j] == '.') {
				j++
			}
			toks = append(toks, token{text: src[i:j], line: line})
			i = j
		default:
			return nil, fmt.Errorf("%s:%d: unexpected character %q", file, line, c)
		}
	}
	return toks, nil
}

func isWord(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

type rawField struct {
	id    int16
	req   string
	typ   *schema.Type // struct/enum refs unresolved: Kind "ref", Name the identifier
	name  string
	order int
	def   *token // the default value, when it is a scalar (a string, number, true/false or Enum.NAME)
}

type rawStruct struct {
	kind   string
	fields []*rawField
}

type rawMethod struct {
	name    string
	oneway  bool
	ret     *schema.Type // nil for void
	args    []*rawField
	throws  []*rawField
	service string
}

type parser struct {
	toks     []token
	pos      int
	file     string
	structs  map[string]*rawStruct
	enums    map[string]*schema.Enum
	typedefs map[string]*schema.Type
	methods  []*rawMethod
}

func (p *parser) errf(format string, args ...any) error {
	line := 0
	if p.pos < len(p.toks) {
		line = p.toks[p.pos].line
	} else if len(p.toks) > 0 {
		line = p.toks[len(p.toks)-1].line
	}
	return fmt.Errorf("%s:%d: %s", p.file, line, fmt.Sprintf(format, args...))
}

func (p *parser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos].text
	}
	return ""
}

func (p *parser) next() (token, error) {
	if p.pos >= len(p.toks) {
		return token{}, p.errf("unexpected end of file")
	}
	t := p.toks[p.pos]
	p.pos++
	return t, nil
}

func (p *parser) expect(s string) error {
	t, err := p.next()
	if err != nil {
		return err
	}
	if t.text != s || t.str {
		p.pos--
		return p.errf("expected %q, found %q", s, t.text)
	}
	return nil
}

func (p *parser) skipSep() {
	if s := p.peek(); s == "," || s == ";" {
		p.pos++
	}
}

// ParseFile reads path (and the files it includes, relative to its folder) as profile's schema.
func ParseFile(path, profile string) (*schema.Schema, error) {
	p := &parser{structs: map[string]*rawStruct{}, enums: map[string]*schema.Enum{},
		typedefs: map[string]*schema.Type{}}
	if err := p.parseFile(path, "ThriftHiveMetastore"); err != nil {
		return nil, err
	}
	return p.build(profile)
}

func (p *parser) parseFile(path, mainService string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	toks, err := lex(string(b), path)
	if err != nil {
		return err
	}
	saveToks, savePos, saveFile := p.toks, p.pos, p.file
	p.toks, p.pos, p.file = toks, 0, path
	defer func() { p.toks, p.pos, p.file = saveToks, savePos, saveFile }()
	for p.pos < len(p.toks) {
		t, _ := p.next()
		switch t.text {
		case "include":
			inc, err := p.next()
			if err != nil {
				return err
			}
			if err := p.parseFile(filepath.Join(filepath.Dir(path), inc.text), ""); err != nil {
				return err
			}
		case "cpp_include":
			p.pos++
		case "namespace":
			p.pos += 2
		case "const":
			if _, err := p.parseType(); err != nil {
				return err
			}
			p.pos++ // name
			if err := p.expect("="); err != nil {
				return err
			}
			if err := p.skipConstValue(); err != nil {
				return err
			}
			p.skipSep()
		case "typedef":
			typ, err := p.parseType()
			if err != nil {
				return err
			}
			name, err := p.next()
			if err != nil {
				return err
			}
			p.typedefs[name.text] = typ
			p.skipSep()
		case "enum":
			if err := p.parseEnum(); err != nil {
				return err
			}
		case "struct", "union", "exception":
			if err := p.parseStruct(t.text); err != nil {
				return err
			}
		case "service":
			if err := p.parseService(); err != nil {
				return err
			}
		default:
			p.pos--
			return p.errf("unexpected %q at top level", t.text)
		}
	}
	return nil
}

func (p *parser) skipConstValue() error {
	t, err := p.next()
	if err != nil {
		return err
	}
	switch t.text {
	case "[", "{":
		closer := map[string]string{"[": "]", "{": "}"}[t.text]
		for p.peek() != closer {
			if err := p.skipConstValue(); err != nil {
				return err
			}
			if s := p.peek(); s == ":" || s == "," || s == ";" {
				p.pos++
			}
		}
		p.pos++
	}
	return nil
}

func (p *parser) parseType() (*schema.Type, error) {
	t, err := p.next()
	if err != nil {
		return nil, err
	}
	var typ *schema.Type
	switch t.text {
	case "bool", "byte", "i16", "i32", "i64", "double", "string", "binary":
		typ = &schema.Type{Kind: t.text}
	case "i8":
		typ = &schema.Type{Kind: "byte"}
	case "list", "set":
		if err := p.expect("<"); err != nil {
			return nil, err
		}
		elem, err := p.parseType()
		if err != nil {
			return nil, err
		}
		if err := p.expect(">"); err != nil {
			return nil, err
		}
		typ = &schema.Type{Kind: t.text, Elem: elem}
	case "map":
		if err := p.expect("<"); err != nil {
			return nil, err
		}
		k, err := p.parseType()
		if err != nil {
			return nil, err
		}
		if err := p.expect(","); err != nil {
			return nil, err
		}
		v, err := p.parseType()
		if err != nil {
			return nil, err
		}
		if err := p.expect(">"); err != nil {
			return nil, err
		}
		typ = &schema.Type{Kind: "map", Key: k, Value: v}
	default:
		if t.str || !isWord(t.text[0]) {
			p.pos--
			return nil, p.errf("expected a type, found %q", t.text)
		}
		name := t.text
		if i := strings.LastIndexByte(name, '.'); i >= 0 {
			name = name[i+1:] // fb303.fb_status -> fb_status
		}
		typ = &schema.Type{Kind: "ref", Name: name}
	}
	return typ, nil
}

func (p *parser) parseEnum() error {
	name, err := p.next()
	if err != nil {
		return err
	}
	if err := p.expect("{"); err != nil {
		return err
	}
	e := &schema.Enum{}
	next := int32(0)
	for p.peek() != "}" {
		vn, err := p.next()
		if err != nil {
			return err
		}
		v := next
		if p.peek() == "=" {
			p.pos++
			num, err := p.next()
			if err != nil {
				return err
			}
			n, err := strconv.ParseInt(num.text, 0, 32)
			if err != nil {
				return p.errf("enum %s.%s: bad value %q", name.text, vn.text, num.text)
			}
			v = int32(n)
		}
		e.Values = append(e.Values, &schema.EnumValue{Name: vn.text, Value: v})
		next = v + 1
		p.skipSep()
	}
	p.pos++
	sort.Slice(e.Values, func(i, j int) bool { return e.Values[i].Value < e.Values[j].Value })
	if p.enums[name.text] != nil {
		return p.errf("enum %s defined twice", name.text)
	}
	p.enums[name.text] = e
	return nil
}

// parseFields reads fields up to closer, numbering fields without an id -1, -2, ….
func (p *parser) parseFields(closer string) ([]*rawField, error) {
	var fs []*rawField
	auto := int16(0)
	for p.peek() != closer {
		f := &rawField{req: schema.ReqDefault, order: len(fs)}
		if p.pos+1 < len(p.toks) && p.toks[p.pos+1].text == ":" {
			n, err := strconv.ParseInt(p.peek(), 10, 16)
			if err != nil {
				return nil, p.errf("bad field id %q", p.peek())
			}
			f.id = int16(n)
			p.pos += 2
		} else {
			auto--
			f.id = auto
		}
		switch p.peek() {
		case "required":
			f.req = schema.ReqRequired
			p.pos++
		case "optional":
			f.req = schema.ReqOptional
			p.pos++
		}
		typ, err := p.parseType()
		if err != nil {
			return nil, err
		}
		f.typ = typ
		name, err := p.next()
		if err != nil {
			return nil, err
		}
		f.name = name.text
		if p.peek() == "=" {
			p.pos++
			if s := p.peek(); s != "[" && s != "{" {
				def := p.toks[p.pos]
				f.def = &def
			}
			if err := p.skipConstValue(); err != nil {
				return nil, err
			}
		}
		p.skipSep()
		fs = append(fs, f)
	}
	p.pos++
	return fs, nil
}

func (p *parser) parseStruct(kind string) error {
	name, err := p.next()
	if err != nil {
		return err
	}
	if err := p.expect("{"); err != nil {
		return err
	}
	fs, err := p.parseFields("}")
	if err != nil {
		return err
	}
	if p.structs[name.text] != nil {
		return p.errf("struct %s defined twice", name.text)
	}
	p.structs[name.text] = &rawStruct{kind: kind, fields: fs}
	return nil
}

func (p *parser) parseService() error {
	name, err := p.next()
	if err != nil {
		return err
	}
	if p.peek() == "extends" {
		p.pos += 2
	}
	if err := p.expect("{"); err != nil {
		return err
	}
	for p.peek() != "}" {
		m := &rawMethod{service: name.text}
		if p.peek() == "oneway" {
			m.oneway = true
			p.pos++
		}
		if p.peek() == "void" {
			p.pos++
		} else {
			if m.ret, err = p.parseType(); err != nil {
				return err
			}
		}
		mn, err := p.next()
		if err != nil {
			return err
		}
		m.name = mn.text
		if err := p.expect("("); err != nil {
			return err
		}
		if m.args, err = p.parseFields(")"); err != nil {
			return err
		}
		if p.peek() == "throws" {
			p.pos++
			if err := p.expect("("); err != nil {
				return err
			}
			if m.throws, err = p.parseFields(")"); err != nil {
				return err
			}
		}
		p.skipSep()
		p.methods = append(p.methods, m)
	}
	p.pos++
	return nil
}

func (p *parser) resolve(where string, t *schema.Type) (*schema.Type, error) {
	switch t.Kind {
	case "list", "set":
		e, err := p.resolve(where, t.Elem)
		return &schema.Type{Kind: t.Kind, Elem: e}, err
	case "map":
		k, err := p.resolve(where, t.Key)
		if err != nil {
			return nil, err
		}
		v, err := p.resolve(where, t.Value)
		return &schema.Type{Kind: "map", Key: k, Value: v}, err
	case "ref":
		if td := p.typedefs[t.Name]; td != nil {
			return p.resolve(where, td)
		}
		if p.structs[t.Name] != nil {
			return &schema.Type{Kind: "struct", Name: t.Name}, nil
		}
		if p.enums[t.Name] != nil {
			return &schema.Type{Kind: "enum", Name: t.Name}, nil
		}
		return nil, fmt.Errorf("%s: unknown type %s", where, t.Name)
	}
	return t, nil
}

// defaultLiteral renders a field's scalar IDL default as the schema's JSON literal (an enum value as its number).
func (p *parser) defaultLiteral(where string, t *schema.Type, def *token) (json.RawMessage, error) {
	if def == nil {
		return nil, nil
	}
	if def.str {
		b, err := json.Marshal(def.text)
		return b, err
	}
	if t.Kind == "enum" {
		name, value, _ := strings.Cut(def.text, ".")
		e := p.enums[name]
		if e == nil || name != t.Name {
			return nil, fmt.Errorf("%s: default %s is not a value of enum %s", where, def.text, t.Name)
		}
		for _, v := range e.Values {
			if v.Name == value {
				return json.RawMessage(strconv.Itoa(int(v.Value))), nil
			}
		}
		return nil, fmt.Errorf("%s: enum %s has no value %s", where, t.Name, value)
	}
	if def.text == "true" || def.text == "false" {
		return json.RawMessage(def.text), nil
	}
	if _, err := strconv.ParseInt(def.text, 10, 64); err != nil {
		return nil, fmt.Errorf("%s: default %q is not a literal this reader understands", where, def.text)
	}
	return json.RawMessage(def.text), nil
}

func (p *parser) build(profile string) (*schema.Schema, error) {
	one := []string{profile}
	s := &schema.Schema{Profiles: one, Enums: map[string]*schema.Enum{}, Structs: map[string]*schema.Struct{}}
	for n, e := range p.enums {
		e.Profiles = one
		for _, v := range e.Values {
			v.Profiles = one
		}
		s.Enums[n] = e
	}
	conv := func(owner string, fs []*rawField) ([]*schema.Field, error) {
		var out []*schema.Field
		for _, f := range fs {
			t, err := p.resolve(owner+"."+f.name, f.typ)
			if err != nil {
				return nil, err
			}
			def, err := p.defaultLiteral(owner+"."+f.name, t, f.def)
			if err != nil {
				return nil, err
			}
			out = append(out, &schema.Field{ID: f.id, Name: f.name, Required: f.req, Type: t, Default: def, Profiles: one})
		}
		return out, nil
	}
	for n, rs := range p.structs {
		fs, err := conv(n, rs.fields)
		if err != nil {
			return nil, err
		}
		s.Structs[n] = &schema.Struct{Kind: rs.kind, Profiles: one, Fields: fs}
	}
	for _, m := range p.methods {
		if s.Method(m.name) != nil {
			return nil, fmt.Errorf("method %s declared twice", m.name)
		}
		args, err := conv(m.name+"_args", m.args)
		if err != nil {
			return nil, err
		}
		sm := &schema.Method{Name: m.name, Oneway: m.oneway, Args: m.name + "_args", Profiles: one, Service: m.service}
		s.Structs[sm.Args] = &schema.Struct{Kind: schema.KindStruct, Profiles: one, Fields: args}
		if !m.oneway {
			sm.Result = m.name + "_result"
			var res []*schema.Field
			if m.ret != nil {
				t, err := p.resolve(m.name+"_result.success", m.ret)
				if err != nil {
					return nil, err
				}
				res = append(res, &schema.Field{ID: 0, Name: "success", Required: schema.ReqDefault, Type: t, Profiles: one})
			}
			ex, err := conv(m.name+"_result", m.throws)
			if err != nil {
				return nil, err
			}
			s.Structs[sm.Result] = &schema.Struct{Kind: schema.KindStruct, Profiles: one, Fields: append(res, ex...)}
		}
		s.Methods = append(s.Methods, sm)
	}
	sort.Slice(s.Methods, func(i, j int) bool { return s.Methods[i].Name < s.Methods[j].Name })
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}
