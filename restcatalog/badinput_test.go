package restcatalog_test

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/restcatalog"
)

func countFiles(t *testing.T, root string) int {
	n := 0
	_ = filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// Bad input of every kind gets a clear 4xx ErrorModel, and nothing reaches
// the metastores or the warehouse.
func TestBadInput(t *testing.T) {
	e := newEnv(t, nil, func(o *restcatalog.Options) { o.MaxBodyBytes = 1 << 20 })
	wh := t.TempDir()
	ns := uniq("bad")
	if a := e.do("POST", "/v1/catalog1/namespaces", map[string]any{"namespace": []string{ns}, "properties": map[string]string{"location": "file:" + wh + "/" + ns}}); a.Status != 200 {
		t.Fatalf("create namespace: %d %s", a.Status, a.Body)
	}
	if a := e.do("POST", "/v1/catalog1/namespaces/"+ns+"/tables", map[string]any{"name": "t", "schema": simpleSchema}); a.Status != 200 {
		t.Fatalf("create table: %d %s", a.Status, a.Body)
	}
	ctx := tctx(t)
	dbs1, _ := direct(t, hms1).GetAllDatabases(ctx)
	dbs2, _ := direct(t, hms2).GetAllDatabases(ctx)
	tables, _ := direct(t, hms1).GetAllTables(ctx, ns)
	files := countFiles(t, wh)
	before, _ := direct(t, hms1).GetTable(ctx, ns, "t")

	tablePath := "/v1/catalog1/namespaces/" + ns + "/tables"
	commitPath := tablePath + "/t"
	big := `{"namespace":["big"],"properties":{"pad":"` + strings.Repeat("x", 3<<19) + `"}}`
	cases := []struct {
		name, method, path string
		body               any
		contentType        string
		status             int
		errType            string
		mentions           string
	}{
		{"malformed JSON", "POST", "/v1/catalog1/namespaces", `{"namespace": [`, "", 400, "BadRequestException", "ends early"},
		{"not an object", "POST", "/v1/catalog1/namespaces", `["x"]`, "", 400, "BadRequestException", "malformed"},
		{"trailing data", "POST", "/v1/catalog1/namespaces", `{"namespace":["x1"]} {}`, "", 400, "BadRequestException", "after the JSON"},
		{"empty body", "POST", "/v1/catalog1/namespaces", "", "", 400, "BadRequestException", "empty"},
		{"unknown field", "POST", "/v1/catalog1/namespaces", `{"namespace":["x2"],"bogus":1}`, "", 400, "BadRequestException", "bogus"},
		{"wrong field type", "POST", "/v1/catalog1/namespaces", `{"namespace":"x3"}`, "", 400, "BadRequestException", "namespace"},
		{"multi-level namespace", "POST", "/v1/catalog1/namespaces", `{"namespace":["a","b"]}`, "", 400, "BadRequestException", "levels"},
		{"wrong content type", "POST", "/v1/catalog1/namespaces", `{"namespace":["x4"]}`, "text/plain", 415, "UnsupportedMediaTypeException", "text/plain"},
		{"oversized body", "POST", "/v1/catalog1/namespaces", big, "", 413, "RequestTooLargeException", "1048576"},
		{"unknown update action", "POST", commitPath, `{"requirements":[],"updates":[{"action":"frobnicate"}]}`, "", 400, "BadRequestException", "frobnicate"},
		{"unknown requirement", "POST", commitPath, `{"requirements":[{"type":"assert-moon-phase"}],"updates":[]}`, "", 400, "BadRequestException", "assert-moon-phase"},
		{"commit identifier mismatch", "POST", commitPath, `{"identifier":{"namespace":["other"],"name":"t"},"requirements":[],"updates":[]}`, "", 400, "BadRequestException", "does not match"},
		{"schema missing", "POST", tablePath, `{"name":"noschema"}`, "", 400, "BadRequestException", "schema"},
		{"update without its field", "POST", commitPath, `{"requirements":[],"updates":[{"action":"set-location"}]}`, "", 400, "BadRequestException", `update 0 (set-location): field "location": is required`},
		{"reserved property", "POST", commitPath, `{"requirements":[],"updates":[{"action":"set-properties","updates":{"current-snapshot-id":"1"}}]}`, "", 400, "BadRequestException", `"current-snapshot-id" is reserved`},
		{"requirement not met", "POST", commitPath, `{"requirements":[{"type":"assert-current-schema-id","current-schema-id":7}],"updates":[{"action":"set-properties","updates":{"a":"b"}}]}`, "", 409, "CommitFailedException", "Requirement failed: current schema changed: the commit expects schema 7, the table's is 0"},
		{"object store location", "POST", tablePath, map[string]any{"name": "s3t", "schema": simpleSchema, "location": "s3://bucket/s3t"}, "", 406, "UnsupportedOperationException", `scheme "s3"`},
		{"table name traversal", "POST", tablePath, map[string]any{"name": "../evil", "schema": simpleSchema}, "", 400, "BadRequestException", "evil"},
		{"table name with NUL", "POST", tablePath, map[string]any{"name": "a\x00b", "schema": simpleSchema}, "", 400, "BadRequestException", "control character"},
		{"table location traversal", "POST", tablePath, map[string]any{"name": "loc", "schema": simpleSchema, "location": "file:" + wh + "/../escape"}, "", 400, "BadRequestException", ".."},
		{"relative location", "POST", tablePath, map[string]any{"name": "loc2", "schema": simpleSchema, "location": "relative/dir"}, "", 400, "BadRequestException", "relative"},
		{"namespace in body with slash", "POST", "/v1/catalog1/namespaces", `{"namespace":["a/b"]}`, "", 400, "BadRequestException", "contains '/'"},
		{"namespace dot-dot in path", "GET", "/v1/catalog1/namespaces/%2E%2E", nil, "", 400, "BadRequestException", ".."},
		{"namespace with encoded slash", "GET", "/v1/catalog1/namespaces/a%2Fb/tables", nil, "", 404, "NoSuchNamespaceException", "only letters, digits and '_'"},
		{"table name with an empty part", "POST", tablePath, map[string]any{"name": "a//b", "schema": simpleSchema}, "", 400, "BadRequestException", "empty or '.' part"},
		{"table name with a dot part", "POST", tablePath, map[string]any{"name": "a/./b", "schema": simpleSchema}, "", 400, "BadRequestException", "empty or '.' part"},
		{"table name with a backslash", "POST", tablePath, map[string]any{"name": "a\\b", "schema": simpleSchema}, "", 400, "BadRequestException", "backslash"},
		{"namespace with NUL", "GET", "/v1/catalog1/namespaces/a%00b", nil, "", 400, "BadRequestException", "control character"},
		{"table with newline", "GET", tablePath + "/a%0Ab", nil, "", 400, "BadRequestException", "control character"},
		{"drop traversal", "DELETE", tablePath + "/..", nil, "", 400, "BadRequestException", ".."},
		{"purgeRequested not a boolean", "DELETE", commitPath + "?purgeRequested=maybe", nil, "", 400, "BadRequestException", "maybe"},
		{"unknown prefix", "GET", "/v1/nope/namespaces", nil, "", 404, "NoSuchCatalogException", "nope"},
		{"unknown prefix write", "POST", "/v1/nope/namespaces", `{"namespace":["x5"]}`, "", 404, "NoSuchCatalogException", "nope"},
		{"unknown warehouse", "GET", "/v1/config?warehouse=nope", nil, "", 400, "BadRequestException", "nope"},
		{"unknown endpoint", "GET", "/v2/config", nil, "", 404, "NotFoundException", "/v1/"},
		{"method not allowed", "PUT", "/v1/catalog1/namespaces", `{}`, "", 405, "MethodNotAllowedException", "PUT"},
		{"missing namespace", "GET", "/v1/catalog1/namespaces/" + ns + "_missing", nil, "", 404, "NoSuchNamespaceException", ns + "_missing"},
		{"missing table", "GET", tablePath + "/missing", nil, "", 404, "NoSuchTableException", "missing"},
		{"tables of missing namespace", "GET", "/v1/catalog1/namespaces/" + ns + "_missing/tables", nil, "", 404, "NoSuchNamespaceException", ns + "_missing"},
		{"create in missing namespace", "POST", "/v1/catalog1/namespaces/" + ns + "_missing/tables", map[string]any{"name": "x", "schema": simpleSchema}, "", 404, "NoSuchNamespaceException", ns + "_missing"},
		{"table exists", "POST", tablePath, map[string]any{"name": "t", "schema": simpleSchema}, "", 409, "AlreadyExistsException", "t"},
		{"namespace exists", "POST", "/v1/catalog1/namespaces", map[string]any{"namespace": []string{ns}}, "", 409, "AlreadyExistsException", ns},
		{"namespace not empty", "DELETE", "/v1/catalog1/namespaces/" + ns, nil, "", 409, "NamespaceNotEmptyException", ns},
		{"property updated and removed", "POST", "/v1/catalog1/namespaces/" + ns + "/properties", `{"removals":["k"],"updates":{"k":"v"}}`, "", 422, "UnprocessableEntityException", "k"},
		{"failed requirement", "POST", commitPath, `{"requirements":[{"type":"assert-table-uuid","uuid":"00000000-0000-0000-0000-000000000001"}],"updates":[{"action":"set-properties","updates":{"a":"b"}}]}`, "", 409, "CommitFailedException", "Requirement failed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var a answer
			if c.contentType != "" {
				a = e.do(c.method, c.path, c.body, "Content-Type", c.contentType)
			} else {
				a = e.do(c.method, c.path, c.body)
			}
			typ, msg := a.errorModel(t, c.status)
			if typ != c.errType {
				t.Errorf("type %s, want %s (%s)", typ, c.errType, msg)
			}
			if !strings.Contains(msg, c.mentions) {
				t.Errorf("message %q does not mention %q", msg, c.mentions)
			}
			if ct := a.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
	if a := e.do("PUT", "/v1/catalog1/namespaces/"+ns, `{}`); a.Header.Get("Allow") != "GET, HEAD, DELETE" {
		t.Errorf("405 Allow header %q", a.Header.Get("Allow"))
	}
	// HEAD answers carry no body, errors included.
	for path, status := range map[string]int{
		"/v1/catalog1/namespaces/" + ns:              204,
		"/v1/catalog1/namespaces/" + ns + "_missing": 404,
		"/v1/catalog1/namespaces/%2E%2E":             400,
		"/v1/nope/namespaces/" + ns:                  404,
		tablePath + "/missing":                       404,
		"/v1/catalog1/namespaces/" + ns + "/views/v": 404,
	} {
		if a := e.do("HEAD", path, nil); a.Status != status || len(a.Body) != 0 {
			t.Errorf("HEAD %s: %d with %d body bytes, want %d and none", path, a.Status, len(a.Body), status)
		}
	}

	// Nothing was written anywhere.
	after1, _ := direct(t, hms1).GetAllDatabases(ctx)
	after2, _ := direct(t, hms2).GetAllDatabases(ctx)
	tablesAfter, _ := direct(t, hms1).GetAllTables(ctx, ns)
	if !slices.Equal(dbs1, after1) || !slices.Equal(dbs2, after2) {
		t.Errorf("databases changed: %v -> %v, %v -> %v", dbs1, after1, dbs2, after2)
	}
	if !slices.Equal(tables, tablesAfter) {
		t.Errorf("tables changed: %v -> %v", tables, tablesAfter)
	}
	if n := countFiles(t, wh); n != files {
		t.Errorf("warehouse holds %d files, had %d", n, files)
	}
	if now, _ := direct(t, hms1).GetTable(ctx, ns, "t"); now.Parameters["metadata_location"] != before.Parameters["metadata_location"] {
		t.Error("a refused commit changed the table")
	}
	// Refusals are counted under their route, bad paths under "unmatched".
	if n := metric(t, e, "hms_proxy_rest_requests_total", "route", "unmatched", "status", "404"); n < 1 {
		t.Errorf("unmatched 404 not counted (%v)", n)
	}
	if n := metric(t, e, "hms_proxy_rest_requests_total", "prefix", "catalog1", "route", "POST /v1/{prefix}/namespaces", "status", "413"); n != 1 {
		t.Errorf("413 counted %v times", n)
	}
}
