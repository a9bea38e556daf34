package deploy

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
)

const manifestDir = "kubernetes"

// manifests are the objects of deploy/kubernetes, decoded strictly into the
// Kubernetes API types: an unknown or misspelt field, or a value of the
// wrong type, is an error (kubectl would only warn, or drop it).
type manifests struct {
	configMaps  []corev1.ConfigMap
	deployments []appsv1.Deployment
	services    []corev1.Service
	pdbs        []policyv1.PodDisruptionBudget
	policies    []networkingv1.NetworkPolicy
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

func readManifests(t *testing.T) manifests {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(manifestDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", manifestDir, err)
	}
	var m manifests
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range docSeparator.Split(string(data), -1) {
			if len(bytes.TrimSpace(stripComments([]byte(doc)))) == 0 {
				continue
			}
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Fatalf("%s document %d: %v", f, i+1, err)
			}
			where := fmt.Sprintf("%s document %d (%s %s)", f, i+1, tm.APIVersion, tm.Kind)
			var target any
			switch tm.APIVersion + " " + tm.Kind {
			case "v1 ConfigMap":
				m.configMaps = append(m.configMaps, corev1.ConfigMap{})
				target = &m.configMaps[len(m.configMaps)-1]
			case "apps/v1 Deployment":
				m.deployments = append(m.deployments, appsv1.Deployment{})
				target = &m.deployments[len(m.deployments)-1]
			case "v1 Service":
				m.services = append(m.services, corev1.Service{})
				target = &m.services[len(m.services)-1]
			case "policy/v1 PodDisruptionBudget":
				m.pdbs = append(m.pdbs, policyv1.PodDisruptionBudget{})
				target = &m.pdbs[len(m.pdbs)-1]
			case "networking.k8s.io/v1 NetworkPolicy":
				m.policies = append(m.policies, networkingv1.NetworkPolicy{})
				target = &m.policies[len(m.policies)-1]
			default:
				t.Fatalf("%s: a kind this test does not check", where)
			}
			if err := yaml.UnmarshalStrict([]byte(doc), target); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
		}
	}
	return m
}

func stripComments(b []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

func selects(t *testing.T, what string, sel *metav1.LabelSelector, podLabels map[string]string) {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Errorf("%s: selector: %v", what, err)
		return
	}
	if s.Empty() || !s.Matches(labels.Set(podLabels)) {
		t.Errorf("%s: selector %s does not select the Deployment's pods %v", what, s, podLabels)
	}
}

// containerPort resolves a probe's or Service's port (a name or a number)
// against the container's ports.
func containerPort(t *testing.T, what string, c corev1.Container, p intstr.IntOrString) int32 {
	t.Helper()
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort
		}
	}
	t.Errorf("%s: port %s is not a port of container %s", what, p.String(), c.Name)
	return 0
}

// TestKubernetesManifests checks the manifests against each other, against
// the image (user, paths) and against the proxy (its configuration loader
// reads the ConfigMap; its ports and writable paths must agree with the
// pod), then starts a real proxy from that ConfigMap and asks it the probe
// paths.
func TestKubernetesManifests(t *testing.T) {
	m := readManifests(t)
	if len(m.configMaps) != 1 || len(m.deployments) != 1 || len(m.pdbs) != 1 || len(m.services) != 2 {
		t.Fatalf("want 1 ConfigMap, 1 Deployment, 2 Services, 1 PodDisruptionBudget; got %d, %d, %d, %d",
			len(m.configMaps), len(m.deployments), len(m.services), len(m.pdbs))
	}
	cm, dep := m.configMaps[0], m.deployments[0]

	// The configuration is valid for this build.
	props, ok := cm.Data["hms-proxy.properties"]
	if !ok {
		t.Fatalf("ConfigMap %s has no hms-proxy.properties", cm.Name)
	}
	cfg, err := configs.ParseReader(strings.NewReader(props))
	if err != nil {
		t.Fatalf("the ConfigMap's hms-proxy.properties does not load: %v", err)
	}

	// The pod.
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas < 2 {
		t.Errorf("replicas %v: want several, behind one Service", dep.Spec.Replicas)
	}
	pod := dep.Spec.Template
	podLabels := pod.Labels
	selects(t, "Deployment "+dep.Name, dep.Spec.Selector, podLabels)
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	if strings.Join(c.Args, " ") != "serve "+imageConfigFile || len(c.Command) != 0 {
		t.Errorf("container command %v args %v: want the image's entrypoint with serve %s", c.Command, c.Args, imageConfigFile)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["thrift"] != int32(cfg.Server.Port) || !cfg.Management.Enabled || ports["management"] != int32(cfg.Management.Port) {
		t.Errorf("container ports %v, configuration server.port=%d management.port=%d (enabled %v)", ports, cfg.Server.Port, cfg.Management.Port, cfg.Management.Enabled)
	}
	probes := map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe}
	wantPath := map[string]string{"readiness": "/readyz", "liveness": "/healthz"}
	for kind, pr := range probes {
		if pr == nil || pr.HTTPGet == nil {
			t.Errorf("%s probe: want an HTTP GET (the image has no shell for exec probes)", kind)
			continue
		}
		if pr.HTTPGet.Path != wantPath[kind] {
			t.Errorf("%s probe path %s, want %s", kind, pr.HTTPGet.Path, wantPath[kind])
		}
		if got := containerPort(t, kind+" probe", c, pr.HTTPGet.Port); got != int32(cfg.Management.Port) {
			t.Errorf("%s probe port %d, want the management port %d", kind, got, cfg.Management.Port)
		}
		if pr.TimeoutSeconds < 1 || pr.PeriodSeconds <= pr.TimeoutSeconds {
			t.Errorf("%s probe: timeout %ds, period %ds", kind, pr.TimeoutSeconds, pr.PeriodSeconds)
		}
	}
	if rp := c.ReadinessProbe; rp != nil && rp.TimeoutSeconds < 6 {
		t.Errorf("readiness timeout %ds: a /readyz probe waits up to 5 s for a slow catalog", rp.TimeoutSeconds)
	}
	if lp := c.LivenessProbe; lp != nil && lp.FailureThreshold*lp.PeriodSeconds < 30 {
		t.Errorf("liveness gives up after %ds: a busy proxy would be restarted", lp.FailureThreshold*lp.PeriodSeconds)
	}

	// Security context: the image's user, nothing more.
	psc, sc := pod.Spec.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != imageUID ||
		psc.FSGroup == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v: want runAsNonRoot, runAsUser %d (the image's), fsGroup, seccomp RuntimeDefault", psc, imageUID)
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil ||
		*sc.AllowPrivilegeEscalation || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" ||
		len(sc.Capabilities.Add) != 0 || (sc.Privileged != nil && *sc.Privileged) {
		t.Errorf("container securityContext %+v: want a read-only root, no privilege escalation, all capabilities dropped", sc)
	}
	if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
		t.Error("the proxy does not talk to the Kubernetes API: automountServiceAccountToken must be false")
	}
	req, lim := c.Resources.Requests, c.Resources.Limits
	if req.Cpu().IsZero() || req.Memory().IsZero() || lim.Memory().IsZero() || lim.Memory().Cmp(*req.Memory()) < 0 {
		t.Errorf("resources %+v: want cpu and memory requests and a memory limit above the request", c.Resources)
	}
	memLimit := false
	for _, e := range c.Env {
		if e.Name == "GOMEMLIMIT" && e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil &&
			e.ValueFrom.ResourceFieldRef.Resource == "limits.memory" && e.ValueFrom.ResourceFieldRef.Divisor.IsZero() {
			memLimit = true // bytes: GOMEMLIMIT reads a plain number as bytes
		}
	}
	if !memLimit {
		t.Error("GOMEMLIMIT is not fed from limits.memory (in bytes)")
	}

	// Volumes: the config from the ConfigMap at the image's path, keytabs
	// read-only and not world-readable, and every path the proxy writes on
	// a writable volume (the root file system is read-only).
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	writable := []string{}
	configMounted, keytabs := false, false
	for _, vm := range c.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok {
			t.Errorf("volumeMount %s has no volume", vm.Name)
			continue
		}
		switch {
		case v.ConfigMap != nil:
			if v.ConfigMap.Name != cm.Name || !vm.ReadOnly {
				t.Errorf("config volume %s: ConfigMap %s (want %s), readOnly %v", vm.Name, v.ConfigMap.Name, cm.Name, vm.ReadOnly)
			}
			for _, it := range v.ConfigMap.Items {
				if it.Key == "hms-proxy.properties" && path.Join(vm.MountPath, it.Path) == imageConfigFile {
					configMounted = true
				}
			}
		case v.Secret != nil:
			keytabs = true
			if !vm.ReadOnly || v.Secret.DefaultMode == nil || *v.Secret.DefaultMode&0o007 != 0 {
				t.Errorf("secret volume %s: readOnly %v, defaultMode %v: keytabs must be read-only and not world-readable", vm.Name, vm.ReadOnly, v.Secret.DefaultMode)
			}
		case v.EmptyDir != nil || v.PersistentVolumeClaim != nil:
			if !vm.ReadOnly {
				writable = append(writable, vm.MountPath)
			}
		}
	}
	if !configMounted {
		t.Errorf("the ConfigMap's hms-proxy.properties is not mounted at %s", imageConfigFile)
	}
	if !keytabs {
		t.Error("no Secret volume for keytabs")
	}
	onWritable := func(p string) bool {
		if !path.IsAbs(p) {
			p = path.Join(imageWorkdir, p) // relative to the image's working directory
		}
		for _, w := range writable {
			if strings.HasPrefix(p, strings.TrimSuffix(w, "/")+"/") {
				return true
			}
		}
		return false
	}
	if cfg.Audit.Enabled && !onWritable(cfg.Audit.File) {
		t.Errorf("audit.file=%s is not on a writable volume (mounted: %v): the proxy would refuse to start", cfg.Audit.File, writable)
	}
	if cfg.Logging.File != "" && !onWritable(cfg.Logging.File) {
		t.Errorf("logging.file=%s is not on a writable volume (mounted: %v)", cfg.Logging.File, writable)
	}

	// Stopping: the grace period covers the preStop pause and the drain.
	pause := int64(0)
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
		pause = c.Lifecycle.PreStop.Sleep.Seconds
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || time.Duration(*g-pause)*time.Second <= cfg.Server.ShutdownTimeout {
		t.Errorf("terminationGracePeriodSeconds %v minus the preStop pause %ds must exceed server.shutdown-timeout-seconds (%s)", g, pause, cfg.Server.ShutdownTimeout)
	}
	if ru := dep.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 {
		t.Errorf("rolling update %+v: want maxUnavailable 0 (new replica ready before an old one goes)", ru)
	}

	// Spreading: anti-affinity to the pods themselves.
	aff := pod.Spec.Affinity
	if aff == nil || aff.PodAntiAffinity == nil || len(aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)+
		len(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		t.Error("no pod anti-affinity: replicas may share a node")
	} else {
		for _, w := range aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			selects(t, "pod anti-affinity", w.PodAffinityTerm.LabelSelector, podLabels)
			if w.PodAffinityTerm.TopologyKey != "kubernetes.io/hostname" {
				t.Errorf("anti-affinity topologyKey %s", w.PodAffinityTerm.TopologyKey)
			}
		}
	}
	for _, tsc := range pod.Spec.TopologySpreadConstraints {
		selects(t, "topology spread", tsc.LabelSelector, podLabels)
	}

	// Services.
	svcPorts := map[string]int32{}
	for _, s := range m.services {
		if len(s.Spec.Selector) == 0 || !labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(podLabels)) {
			t.Errorf("Service %s: selector %v does not select the pods %v", s.Name, s.Spec.Selector, podLabels)
		}
		for _, p := range s.Spec.Ports {
			svcPorts[s.Name+"/"+p.Name] = containerPort(t, "Service "+s.Name, c, p.TargetPort)
		}
	}
	if svcPorts["hms-proxy/thrift"] != int32(cfg.Server.Port) || svcPorts["hms-proxy-management/management"] != int32(cfg.Management.Port) {
		t.Errorf("Service ports %v: want hms-proxy/thrift -> %d and hms-proxy-management/management -> %d", svcPorts, cfg.Server.Port, cfg.Management.Port)
	}
	if len(svcPorts) != 2 {
		t.Errorf("Service ports %v: the Thrift port and the management port, each on its own Service", svcPorts)
	}

	// The disruption budget keeps replicas serving.
	pdb := m.pdbs[0]
	selects(t, "PodDisruptionBudget "+pdb.Name, pdb.Spec.Selector, podLabels)
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() < 1 || pdb.Spec.MaxUnavailable.IntValue() >= int(*dep.Spec.Replicas) {
		t.Errorf("PodDisruptionBudget maxUnavailable %v with %d replicas", pdb.Spec.MaxUnavailable, *dep.Spec.Replicas)
	}
	for _, np := range m.policies {
		selects(t, "NetworkPolicy "+np.Name, &np.Spec.PodSelector, podLabels)
		for _, in := range np.Spec.Ingress {
			for _, p := range in.Ports {
				if p.Port != nil {
					containerPort(t, "NetworkPolicy "+np.Name, c, *p.Port)
				}
			}
		}
	}

	// The probe paths exist on a real proxy started from this ConfigMap.
	// Ports and the audit file move for the test, and every cluster name is
	// replaced by loopback, so that the test asks no DNS server: the
	// metastores by a port where nothing listens (the proxy starts, and is
	// not ready), ZooKeeper by a real one (the lock store connects at
	// startup).
	propsMap, err := configs.ReadProperties(strings.NewReader(props))
	if err != nil {
		t.Fatal(err)
	}
	for k := range propsMap {
		switch {
		case strings.HasSuffix(k, ".conf.hive.metastore.uris"):
			propsMap[k] = "thrift://127.0.0.1:" + strconv.Itoa(proxytest.FreePort(t))
		case k == "synthetic-read-lock.store.zookeeper.connect-string":
			propsMap[k] = testbed.StartZooKeeperT(t).Addr
		}
	}
	propsMap["server.bind-host"] = "127.0.0.1"
	propsMap["server.port"] = strconv.Itoa(proxytest.FreePort(t))
	propsMap["management.port"] = strconv.Itoa(proxytest.FreePort(t))
	propsMap["audit.file"] = filepath.Join(t.TempDir(), "audit.log")
	p := proxytest.Start(t, propsMap)
	client := &http.Client{Timeout: 20 * time.Second}
	for kind, pr := range probes {
		if pr == nil || pr.HTTPGet == nil {
			continue
		}
		resp, err := client.Get(p.ManagementURL() + pr.HTTPGet.Path)
		if err != nil {
			t.Errorf("%s probe %s: %v", kind, pr.HTTPGet.Path, err)
			continue
		}
		resp.Body.Close()
		// Both 200: the ConfigMap's metastores are not reachable from here,
		// which /readyz reports without taking the replica out (every
		// replica shares them).
		want := http.StatusOK
		if resp.StatusCode != want {
			t.Errorf("%s probe %s answered %d, want %d", kind, pr.HTTPGet.Path, resp.StatusCode, want)
		}
	}
}

// Strict decoding is what makes the structural test worth something: a
// misspelt field fails instead of being dropped.
func TestManifestDecodingIsStrict(t *testing.T) {
	var d appsv1.Deployment
	err := yaml.UnmarshalStrict([]byte("apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n        - name: x\n          readinesProbe: {}\n"), &d)
	if err == nil || !strings.Contains(err.Error(), "readinesProbe") {
		t.Fatalf("want an error naming the misspelt field, got %v", err)
	}
}
