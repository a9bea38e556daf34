package storage

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/app"
	"github.com/hms-proxy/hms-proxy/configs"
)

// The S3 credentials of a catalog never show: not in the proxy's log, the REST answers, /readyz, the audit, the
// effective configuration check-config prints, nor in the errors of a configuration check-config refuses. A proxy
// with a wrong secret key makes S3 refuse its writes, so the error paths run too.
func TestS3CredentialsNeverShown(t *testing.T) {
	need(t)
	wrong := "wrong-secret-" + uniq("k")
	conf := merged(s3srv.Conf(), plainHDFS.ClientConf(), map[string]string{"fs.s3a.secret.key": wrong})
	p := startProxy(t, hms, conf, nil, app.TestHooks{})
	good := startProxy(t, hms, merged(s3srv.Conf(), plainHDFS.ClientConf()), nil, app.TestHooks{})
	ns := uniq("secret")
	if code, body := good.do(t, "POST", "/v1/cat/namespaces", map[string]any{"namespace": []string{ns},
		"properties": map[string]string{"location": "s3a://" + bucket + "/" + ns}}); code != 200 {
		t.Fatalf("create namespace: %d %v", code, body)
	}
	schema := map[string]any{"type": "struct", "schema-id": 0, "fields": []any{map[string]any{"id": 1, "name": "id", "required": false, "type": "long"}}}
	var answers []string
	for _, px := range []*restProxy{p, good} {
		code, body := px.do(t, "POST", "/v1/cat/namespaces/"+ns+"/tables", map[string]any{"name": "t", "schema": schema})
		answers = append(answers, jsonText(body))
		if px == p && code < 500 {
			t.Fatalf("a table whose metadata S3 refuses to store: want a 5xx answer, got %d %v", code, body)
		}
		if px == good && code != 200 {
			t.Fatalf("create table with the right credentials: %d %v", code, body)
		}
		_, body = px.do(t, "DELETE", "/v1/cat/namespaces/"+ns+"/tables/t?purgeRequested=true", nil)
		answers = append(answers, jsonText(body))
	}
	if !strings.Contains(answers[0], "metadata") {
		t.Fatalf("the refused write's answer does not say what failed: %s", answers[0])
	}

	var seen []string
	for _, px := range []*restProxy{p, good} {
		seen = append(seen, strings.Join(px.LogLines(""), "\n"))
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(px.ManagementURL() + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		seen = append(seen, string(b))
		audit, err := os.ReadFile(px.AuditFile)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, string(audit))
		cfg, err := configs.Parse(px.Props)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, cfg.Effective())
	}
	seen = append(seen, answers...)
	// check-config's errors for bad storage keys: the values of credentials stay out of them.
	for _, bad := range []map[string]string{
		{"fs.s3a.access.key": s3srv.AccessKey},                                        // no secret key
		{"fs.s3a.secret.key": s3srv.SecretKey},                                        // no access key
		{"fs.s3a.endpoint": "http://" + s3srv.AccessKey + ":" + wrong + "@127.0.0.1"}, // credentials in the URL
		{"fs.s3a.access.key": s3srv.AccessKey, "fs.s3a.secret.key": s3srv.SecretKey, "fs.s3a.path.style.access": "maybe"},
	} {
		props := merged(map[string]string{"catalogs": "cat", "catalog.cat.conf.hive.metastore.uris": hms.URI})
		for k, v := range bad {
			props["catalog.cat.conf."+k] = v
		}
		cfg, err := configs.Parse(props)
		if err != nil {
			seen = append(seen, err.Error())
			continue
		}
		err = app.CheckStorage(cfg)
		if err == nil {
			t.Fatalf("storage keys %v accepted", bad)
		}
		seen = append(seen, err.Error(), cfg.Effective())
	}
	for _, text := range seen {
		for _, secret := range []string{s3srv.SecretKey, s3srv.AccessKey, wrong} {
			if strings.Contains(text, secret) {
				i := strings.Index(text, secret)
				t.Fatalf("a credential shows: ...%s...", strings.ReplaceAll(text[max(0, i-200):min(len(text), i+len(secret)+50)], secret, "<CREDENTIAL>"))
			}
		}
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
