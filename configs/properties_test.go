package configs

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestReadPropertiesSyntax(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"equals", "a=b", map[string]string{"a": "b"}},
		{"colon", "a:b", map[string]string{"a": "b"}},
		{"blank separator", "a b", map[string]string{"a": "b"}},
		{"blanks around separator", "  a  =   b", map[string]string{"a": "b"}},
		{"tab and formfeed are blanks", "\ta\f:\tb", map[string]string{"a": "b"}},
		{"blank then separator", "a   :b", map[string]string{"a": "b"}},
		{"second separator belongs to value", "a==b", map[string]string{"a": "=b"}},
		{"colon in value", "uri=thrift://h:9083", map[string]string{"uri": "thrift://h:9083"}},
		{"trailing blanks of a value are kept", "a=b  ", map[string]string{"a": "b  "}},
		{"key only", "a", map[string]string{"a": ""}},
		{"key with empty value", "a=", map[string]string{"a": ""}},
		{"hash comment", "# a=b\nc=d", map[string]string{"c": "d"}},
		{"bang comment", "! a=b\nc=d", map[string]string{"c": "d"}},
		{"indented comment", "   # a=b\nc=d", map[string]string{"c": "d"}},
		{"hash inside a value is not a comment", "a=b#c", map[string]string{"a": "b#c"}},
		{"comment does not continue", "# x \\\na=b", map[string]string{"a": "b"}},
		{"blank lines", "\n\n  \na=b\n\n", map[string]string{"a": "b"}},
		{"continuation", "a=one,\\\n    two,\\\n\tthree", map[string]string{"a": "one,two,three"}},
		{"continued line starting with hash", "a=x\\\n  #y", map[string]string{"a": "x#y"}},
		{"even backslashes do not continue", "a=x\\\\\nb=y", map[string]string{"a": `x\`, "b": "y"}},
		{"continuation then empty line ends it", "a=x\\\n\nb=y", map[string]string{"a": "x", "b": "y"}},
		{"continuation at end of file", "a=x\\", map[string]string{"a": "x"}},
		{"CRLF", "a=b\r\nc=d\r\n", map[string]string{"a": "b", "c": "d"}},
		{"CR only", "a=b\rc=d", map[string]string{"a": "b", "c": "d"}},
		{"CRLF continuation", "a=b\\\r\n  c", map[string]string{"a": "bc"}},
		{"escaped separator in key", `a\=b\:c\ d=e`, map[string]string{"a=b:c d": "e"}},
		{"control escapes", `a=x\ty\nz\r\f`, map[string]string{"a": "x\ty\nz\r\f"}},
		{"unicode escape", `a=caf\u00e9 \u0041`, map[string]string{"a": "café A"}},
		{"surrogate pair escape", `a=\ud83d\ude00`, map[string]string{"a": "😀"}},
		{"utf-8 text", "a=Grüße", map[string]string{"a": "Grüße"}},
		{"other escapes drop the backslash", `re=sales_\d+`, map[string]string{"re": "sales_d+"}},
		{"double backslash", `re=sales_\\d+`, map[string]string{"re": `sales_\d+`}},
		{"last duplicate wins", "a=1\na=2", map[string]string{"a": "2"}},
		{"byte order mark", "\xef\xbb\xbfa=b", map[string]string{"a": "b"}},
		{"empty input", "", map[string]string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ReadProperties(strings.NewReader(c.in))
			if err != nil {
				t.Fatalf("ReadProperties(%q): %v", c.in, err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("ReadProperties(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestReadPropertiesErrorsNameLines(t *testing.T) {
	in := "a=1\nb=\\u12\nc=ok\nd=\\uzzzz1\ne=\xff\xfe\n"
	_, err := ReadProperties(strings.NewReader(in))
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("want *SyntaxError, got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"line 2: malformed \\uXXXX", "line 4: malformed \\uXXXX", "line 5: not valid UTF-8"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
	if strings.Contains(msg, "line 3") || strings.Contains(msg, "line 1") {
		t.Errorf("good lines reported: %q", msg)
	}
}

func TestEscapeRoundTrip(t *testing.T) {
	for _, kv := range [][2]string{
		{"a=b:c d", " leading blank"},
		{"#key", "x\\y\tz\n"},
		{"catalog.c.expose-table-patterns.fin_.*", `sales_\d+,a{1,2}`},
		{"k", "ünï\x01"},
	} {
		text := escapeKey(kv[0]) + "=" + escapeValue(kv[1]) + "\n"
		got, err := ReadProperties(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		if got[kv[0]] != kv[1] || len(got) != 1 {
			t.Errorf("%q read back as %q, want %q=%q", text, got, kv[0], kv[1])
		}
	}
}
