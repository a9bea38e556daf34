package ranger

import (
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// PluginXML is what ranger.config-dir's plugin files say, read the way the
// Java plugin reads them: ranger-{type}-security.xml (the plugin's
// ranger.plugin.{type}.* properties) and ranger-policymgr-ssl.xml (the
// truststore of an https Ranger Admin). Empty fields were not set. The
// proxy's own ranger.* keys, when set, win over these (the wiring merges).
type PluginXML struct {
	PolicyRESTURL  string
	ServiceName    string
	PolicyCacheDir string
	PollInterval   time.Duration
	ConnectTimeout time.Duration
	ReadTimeout    time.Duration
	ClusterName    string
	SuperUsers     []string
	SuperGroups    []string
	TruststoreFile string
	TruststoreType string
	// Files lists the files read.
	Files []string
}

type hadoopConf struct {
	Properties []struct {
		Name  string `xml:"name"`
		Value string `xml:"value"`
	} `xml:"property"`
}

// ReadConfigDir reads the plugin files of dir for serviceType ("hive"). A
// missing file is skipped; a file that is not Hadoop configuration XML, or
// a number that is not one, is an error naming the file and property.
func ReadConfigDir(dir, serviceType string) (*PluginXML, error) {
	out := &PluginXML{}
	props := map[string]string{}
	where := map[string]string{}
	for _, name := range []string{"ranger-" + serviceType + "-security.xml", "ranger-policymgr-ssl.xml"} {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("ranger.config-dir=%s: %w", dir, err)
		}
		var c hadoopConf
		if err := xml.Unmarshal(data, &c); err != nil {
			return nil, fmt.Errorf("ranger.config-dir=%s: %s is not Hadoop configuration XML: %w", dir, name, err)
		}
		for _, p := range c.Properties {
			props[strings.TrimSpace(p.Name)] = strings.TrimSpace(p.Value)
			where[strings.TrimSpace(p.Name)] = path
		}
		out.Files = append(out.Files, path)
	}
	pre := "ranger.plugin." + serviceType + "."
	out.PolicyRESTURL = props[pre+"policy.rest.url"]
	out.ServiceName = props[pre+"service.name"]
	out.PolicyCacheDir = props[pre+"policy.cache.dir"]
	out.ClusterName = props[pre+"access.cluster.name"]
	out.SuperUsers = splitList(props[pre+"super.users"])
	out.SuperGroups = splitList(props[pre+"super.groups"])
	out.TruststoreFile = props["xasecure.policymgr.clientssl.truststore"]
	out.TruststoreType = props["xasecure.policymgr.clientssl.truststore.type"]
	for _, d := range []struct {
		key string
		to  *time.Duration
	}{
		{pre + "policy.pollIntervalMs", &out.PollInterval},
		{pre + "policy.rest.client.connection.timeoutMs", &out.ConnectTimeout},
		{pre + "policy.rest.client.read.timeoutMs", &out.ReadTimeout},
	} {
		v, ok := props[d.key]
		if !ok || v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("ranger.config-dir=%s: %s in %s is %q, not a number of milliseconds", dir, d.key, where[d.key], v)
		}
		*d.to = time.Duration(n) * time.Millisecond
	}
	return out, nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
