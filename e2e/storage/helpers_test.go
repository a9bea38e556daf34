package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/hms-proxy/hms-proxy/app"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// restProxy is a proxy with one catalog ("cat") and its REST listener.
type restProxy struct {
	*proxytest.Proxy
	base string
}

// startProxy starts a proxy whose catalog cat is metastore ms with the given catalog conf keys (without the
// catalog.cat.conf. prefix) and more top-level properties.
func startProxy(t *testing.T, ms *testbed.Metastore, conf map[string]string, props map[string]string, hooks app.TestHooks) *restProxy {
	t.Helper()
	port := proxytest.FreePort(t)
	all := map[string]string{
		"catalogs": "cat", "catalog.cat.conf.hive.metastore.uris": ms.URI,
		"rest-catalog.enabled": "true", "rest-catalog.bind-host": "127.0.0.1", "rest-catalog.port": strconv.Itoa(port),
	}
	for k, v := range conf {
		all["catalog.cat.conf."+k] = v
	}
	for k, v := range props {
		all[k] = v
	}
	return &restProxy{Proxy: proxytest.StartWith(t, all, hooks), base: "http://127.0.0.1:" + strconv.Itoa(port)}
}

func merged(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// do sends one REST request and decodes the JSON answer.
func (p *restProxy) do(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, p.base+path, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 3 * time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func pyIceberg(t *testing.T) string {
	return testbed.PythonT(t, "pyiceberg", testbed.PyIcebergPackages...)
}

// pyS3Props are PyIceberg's FileIO properties for the test bed's S3.
func pyS3Props() map[string]string {
	return map[string]string{"s3.endpoint": s3srv.Endpoint, "s3.access-key-id": s3srv.AccessKey,
		"s3.secret-access-key": s3srv.SecretKey, "s3.region": "us-east-1"}
}

// runPy runs testdata/pyiceberg_storage.py with cfg and decodes its answer into out.
func runPy(t *testing.T, cfg map[string]any, out any) {
	t.Helper()
	py := pyIceberg(t)
	arg, _ := json.Marshal(cfg)
	run, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(run, py, filepath.Join("testdata", "pyiceberg_storage.py"), string(arg))
	// pyarrow's AWS SDK computes checksums s3proxy does not know unless told to only when required
	cmd.Env = append(os.Environ(), "PYICEBERG_HOME="+t.TempDir(), "PYTHONDONTWRITEBYTECODE=1",
		"AWS_REQUEST_CHECKSUM_CALCULATION=WHEN_REQUIRED", "AWS_RESPONSE_CHECKSUM_VALIDATION=WHEN_REQUIRED", "AWS_EC2_METADATA_DISABLED=true")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	testbed.CountLaunch("PyIceberg runs (pyiceberg_storage.py)")
	stdout, err := cmd.Output()
	ls := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	last := ls[len(ls)-1]
	if err != nil {
		t.Fatalf("PyIceberg %v: %v\n%s\nstderr tail:\n%s", cfg["scenario"], err, last, lines(stderr.String(), 30))
	}
	if err := json.Unmarshal([]byte(last), out); err != nil {
		t.Fatalf("PyIceberg %v answered %q: %v", cfg["scenario"], last, err)
	}
}

func makeBucket() error {
	c, err := minio.New(strings.TrimPrefix(s3srv.Endpoint, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(s3srv.AccessKey, s3srv.SecretKey, ""), BucketLookup: minio.BucketLookupPath, Region: "us-east-1"})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return c.MakeBucket(ctx, bucket, minio.MakeBucketOptions{})
}

// s3Key turns s3://bucket/key or s3a://bucket/key into key.
func s3Key(t *testing.T, loc string) string {
	t.Helper()
	for _, p := range []string{"s3://" + bucket + "/", "s3a://" + bucket + "/"} {
		if k, ok := strings.CutPrefix(loc, p); ok {
			return k
		}
	}
	t.Fatalf("%s is not in bucket %s", loc, bucket)
	return ""
}
