package ranger

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The download from Ranger Admin, as the Java plugin's RangerAdminRESTClient
// does it: GET /service/plugins/policies/download/{service} (Kerberized:
// /service/plugins/secure/policies/download/{service}) and
// /service/roles/download/{service} (/service/roles/secure/download/...),
// with lastKnownVersion/lastKnownRoleVersion, lastActivationTime, pluginId,
// clusterName, supportsPolicyDeltas=false and pluginCapabilities; 304 (or
// 204) when nothing changed. Several Admin URLs fail over in turn, starting
// with the last one that answered; only a failure to get any HTTP answer
// moves to the next, as the Java client does.

// pluginCapabilities is what the Java plugin 2.5.0 announces (every feature
// bit it knows); Admin only records it. What the proxy cannot evaluate is
// handled when the policies arrive (deny-biased or not ready).
const pluginCapabilities = "7ffff"

// Negotiator makes "Authorization: Negotiate" headers (security/gssapi's
// Login does) for a service principal such as "HTTP/ranger.example.com".
type Negotiator interface {
	NegotiateHeader(spn string) (string, error)
}

// AdminOptions configure the download client.
type AdminOptions struct {
	// URLs are ranger.policy.rest.url's comma-separated Admin URLs.
	URLs []string
	// ServiceName is ranger.service-name; AppID ranger.app-id.
	ServiceName, AppID string
	// ClusterName is sent as clusterName ("" as the Java plugin by default).
	ClusterName string
	// Hostname goes into pluginId (appId@host-service); "" = os.Hostname.
	Hostname string
	// ConnectTimeout and ReadTimeout bound one attempt.
	ConnectTimeout, ReadTimeout time.Duration
	// TLS is the client TLS configuration for https URLs (truststore).
	TLS *tls.Config
	// Negotiate, when set, makes the download Kerberized: the secure paths,
	// with a SPNEGO header for HTTP/<admin host>.
	Negotiate Negotiator
}

// adminClient downloads policies and roles.
type adminClient struct {
	o        AdminOptions
	http     *http.Client
	pluginID string
	mu       sync.Mutex
	active   int // index of the URL that answered last
}

func newAdminClient(o AdminOptions) (*adminClient, error) {
	if len(o.URLs) == 0 {
		return nil, errors.New("ranger.policy.rest.url names no Ranger Admin URL")
	}
	for i, u := range o.URLs {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return nil, fmt.Errorf("ranger.policy.rest.url=%s: %q is not an http(s) URL", strings.Join(o.URLs, ","), u)
		}
		o.URLs[i] = strings.TrimRight(u, "/")
	}
	host := o.Hostname
	if host == "" {
		host, _ = os.Hostname()
		if host == "" {
			host = "unknownHost"
		}
	}
	id := host + "-" + o.ServiceName
	if o.AppID != "" {
		id = o.AppID + "@" + id
	}
	if len(id) > 255 {
		id = id[:255]
	}
	tr := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: o.ConnectTimeout}).DialContext,
		TLSClientConfig:       o.TLS,
		TLSHandshakeTimeout:   o.ConnectTimeout,
		ResponseHeaderTimeout: o.ReadTimeout,
		MaxIdleConnsPerHost:   2,
		Proxy:                 nil,
	}
	return &adminClient{o: o, pluginID: id, http: &http.Client{Transport: tr}}, nil
}

// errServiceNotFound: Admin does not know the service (404).
var errServiceNotFound = errors.New("service not found")

// download is one GET with failover: body of a 200, or nil for 304/204.
func (a *adminClient) download(ctx context.Context, path string, q url.Values) ([]byte, string, error) {
	a.mu.Lock()
	start := a.active
	a.mu.Unlock()
	var errs []string
	for i := range a.o.URLs {
		idx := (start + i) % len(a.o.URLs)
		base := a.o.URLs[idx]
		body, status, err := a.get(ctx, base, path, q)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", base, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		a.mu.Lock()
		a.active = idx
		a.mu.Unlock()
		switch status {
		case http.StatusOK:
			return body, base, nil
		case http.StatusNotModified, http.StatusNoContent:
			return nil, base, nil
		case http.StatusNotFound:
			return nil, base, fmt.Errorf("%s%s answered 404 %s: %w", base, path, trim(body), errServiceNotFound)
		default:
			return nil, base, fmt.Errorf("%s%s answered HTTP %d: %s", base, path, status, trim(body))
		}
	}
	return nil, "", fmt.Errorf("no Ranger Admin answered: %s", strings.Join(errs, "; "))
}

func trim(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

func (a *adminClient) get(ctx context.Context, base, path string, q url.Values) ([]byte, int, error) {
	if a.o.ReadTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.o.ConnectTimeout+a.o.ReadTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path+"?"+q.Encode(), nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/json")
	if a.o.Negotiate != nil {
		u, _ := url.Parse(base)
		h, err := a.o.Negotiate.NegotiateHeader("HTTP/" + strings.ToLower(u.Hostname()))
		if err != nil {
			return nil, 0, fmt.Errorf("kerberos (SPNEGO) login for HTTP/%s: %w", u.Hostname(), err)
		}
		req.Header.Set("Authorization", h)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 512<<20))
	if err != nil {
		return nil, 0, fmt.Errorf("reading the answer: %w", err)
	}
	return body, resp.StatusCode, nil
}

// policies downloads the policy set when it changed since lastKnown.
func (a *adminClient) policies(ctx context.Context, lastKnown, activation int64) ([]byte, string, error) {
	return a.document(ctx, "/service/plugins/policies/download/", "/service/plugins/secure/policies/download/",
		"lastKnownVersion", lastKnown, activation, "supportsPolicyDeltas", "false")
}

// roles downloads the roles when they changed since lastKnown.
func (a *adminClient) roles(ctx context.Context, lastKnown, activation int64) ([]byte, string, error) {
	return a.document(ctx, "/service/roles/download/", "/service/roles/secure/download/",
		"lastKnownRoleVersion", lastKnown, activation)
}

// document asks for one of the service's documents with the parameters the
// Java plugin sends (extra: more name, value pairs).
func (a *adminClient) document(ctx context.Context, path, securePath, versionParam string, lastKnown, activation int64, extra ...string) ([]byte, string, error) {
	if a.o.Negotiate != nil {
		path = securePath
	}
	q := url.Values{}
	q.Set(versionParam, strconv.FormatInt(lastKnown, 10))
	q.Set("lastActivationTime", strconv.FormatInt(activation, 10))
	q.Set("pluginId", a.pluginID)
	q.Set("clusterName", a.o.ClusterName)
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	q.Set("pluginCapabilities", pluginCapabilities)
	return a.download(ctx, path+url.PathEscape(a.o.ServiceName), q)
}

// cacheFiles are the plugin's policy cache: the Java plugin's file names in
// ranger.policy.cache.dir, {appId}_{service}.json and
// {appId}_{service}_roles.json.
type cacheFiles struct {
	dir, policies, roles string
}

func newCacheFiles(dir, appID, service string) cacheFiles {
	if dir == "" {
		return cacheFiles{}
	}
	clean := func(s string) string {
		return strings.NewReplacer(string(filepath.Separator), "_", string(filepath.ListSeparator), "_").Replace(s)
	}
	return cacheFiles{dir: dir,
		policies: filepath.Join(dir, clean(fmt.Sprintf("%s_%s.json", appID, service))),
		roles:    filepath.Join(dir, clean(fmt.Sprintf("%s_%s_roles.json", appID, service)))}
}

// write replaces a cache file atomically (a crash leaves the old or the new).
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
