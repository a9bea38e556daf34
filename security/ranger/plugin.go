package ranger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure one Ranger plugin: one Ranger service (ranger.* shared by
// the catalogs, or a catalog's own catalog.<n>.ranger.*).
type Options struct {
	// ServiceType is ranger.service-type ("hive").
	ServiceType string
	// Admin is the download client (URLs, service name, app id, timeouts,
	// TLS, Kerberos).
	Admin AdminOptions
	// CacheDir is ranger.policy.cache.dir ("" = no local policy cache).
	CacheDir string
	// PollInterval is ranger.policy.poll-interval-ms.
	PollInterval time.Duration
	// IgnoreTagPolicies accepts a download that carries tag-based policies,
	// which the proxy does not evaluate (see docs/ranger.md); without it such
	// a download leaves the plugin not ready.
	IgnoreTagPolicies bool
	// Engine configures evaluation (validity schedule zone, clock).
	Engine EngineOptions
	// Metrics records downloads and evaluations (nil: none).
	Metrics *Metrics
	// Log receives download outcomes (nil: slog.Default()).
	Log *slog.Logger
	// Now is the clock of download bookkeeping (nil: time.Now).
	Now func() time.Time
}

// Plugin holds one Ranger service's policies and evaluates them. The
// policies come from Ranger Admin, or from the local policy cache when Admin
// cannot be reached at start. With no policies at all the plugin is not
// ready, and every check is denied with the reason: it never allows for lack
// of policies. Safe for concurrent use.
type Plugin struct {
	o     Options
	admin *adminClient
	cache cacheFiles
	log   *slog.Logger
	now   func() time.Time

	engine atomic.Pointer[Engine]

	mu sync.Mutex // serializes refreshes and guards the fields below
	// the last good documents and their raw bytes
	policies      *ServicePolicies
	roles         *Roles
	policyVersion int64
	roleVersion   int64
	activation    int64 // lastActivationTime sent to Admin (ms)
	source        string
	lastAttempt   time.Time
	lastSuccess   time.Time
	lastUpdate    time.Time
	lastErr       error
	blocked       error // why the current policies cannot be enforced
	activeURL     string
}

// New builds a plugin and loads the local policy cache, if there is one; it
// does not contact Ranger Admin (Refresh and Start do).
func New(o Options) (*Plugin, error) {
	if o.Admin.ServiceName == "" {
		return nil, errors.New("ranger.service-name is required")
	}
	if o.Admin.AppID == "" {
		return nil, errors.New("ranger.app-id is required")
	}
	if o.ServiceType == "" {
		o.ServiceType = "hive"
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 30 * time.Second
	}
	admin, err := newAdminClient(o.Admin)
	if err != nil {
		return nil, err
	}
	p := &Plugin{o: o, admin: admin, cache: newCacheFiles(o.CacheDir, o.Admin.AppID, o.Admin.ServiceName),
		log: o.Log, now: o.Now, policyVersion: -1, roleVersion: -1}
	if p.log == nil {
		p.log = slog.Default()
	}
	if p.now == nil {
		p.now = time.Now
	}
	o.Metrics.registered(o.Admin.ServiceName)
	p.loadCache()
	return p, nil
}

// loadCache installs the cached policies and roles (Ranger's PolicyRefresher
// does the same when Admin does not answer at start).
func (p *Plugin) loadCache() {
	if p.cache.dir == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if data, err := os.ReadFile(p.cache.roles); err == nil {
		if r, err := ParseRoles(data); err == nil {
			p.roles, p.roleVersion = r, r.Version()
		} else {
			p.log.Warn("ranger: unreadable roles cache", "file", p.cache.roles, "err", err)
		}
	}
	data, err := os.ReadFile(p.cache.policies)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			p.lastErr = fmt.Errorf("policy cache %s: %w", p.cache.policies, err)
		}
		return
	}
	sp, err := ParseServicePolicies(data)
	if err != nil {
		p.lastErr = fmt.Errorf("policy cache %s: %w", p.cache.policies, err)
		return
	}
	if sp.ServiceName != "" && sp.ServiceName != p.o.Admin.ServiceName {
		p.lastErr = fmt.Errorf("policy cache %s holds service %q, not %q", p.cache.policies, sp.ServiceName, p.o.Admin.ServiceName)
		return
	}
	p.install(sp, "cache "+p.cache.policies)
}

// install compiles and publishes a policy set (mu held).
func (p *Plugin) install(sp *ServicePolicies, source string) {
	p.policies, p.policyVersion, p.source = sp, sp.Version(), source
	p.activation = p.now().UnixMilli()
	p.lastUpdate = p.now()
	p.publish()
}

// publish rebuilds the engine from the current policies and roles (mu held).
func (p *Plugin) publish() {
	sp := p.policies
	if sp == nil {
		return
	}
	e, err := NewEngine(sp, p.roles, p.o.Engine)
	if err != nil {
		p.blocked = fmt.Errorf("policy version %d of service %s cannot be enforced: %w", sp.Version(), p.o.Admin.ServiceName, err)
		p.engine.Store(nil)
		p.o.Metrics.version(p.o.Admin.ServiceName, sp.Version(), false)
		return
	}
	p.blocked = nil
	if e.ignoredTagPolicies > 0 && !p.o.IgnoreTagPolicies {
		p.blocked = fmt.Errorf("service %s has %d tag-based policies (tag service %s), which hms-proxy does not evaluate; set ranger.ignore-tag-policies=true to enforce the resource policies alone",
			p.o.Admin.ServiceName, e.ignoredTagPolicies, sp.TagPolicies.ServiceName)
	} else if p.roles == nil && usesRoles(sp) {
		p.blocked = fmt.Errorf("policies of service %s name roles, but the roles of the service could not be downloaded and are not in the policy cache", p.o.Admin.ServiceName)
	}
	for _, b := range e.biased {
		p.log.Warn("ranger: policy evaluated deny-biased (only its denials apply)", "service", p.o.Admin.ServiceName, "policy", b)
	}
	if p.blocked != nil {
		p.engine.Store(nil)
	} else {
		p.engine.Store(e)
	}
	p.o.Metrics.version(p.o.Admin.ServiceName, sp.Version(), p.blocked == nil)
}

func usesRoles(sp *ServicePolicies) bool {
	for _, pol := range sp.Policies {
		if pol == nil || !pol.enabled() {
			continue
		}
		for _, items := range [][]*PolicyItem{pol.PolicyItems, pol.DenyPolicyItems, pol.AllowExceptions, pol.DenyExceptions} {
			for _, it := range items {
				if it != nil && len(it.Roles) > 0 {
					return true
				}
			}
		}
	}
	return false
}

// Refresh asks Ranger Admin for changed roles and policies once (roles
// first, as the Java plugin). Unchanged documents cost one 304 each. A
// failure keeps the policies in force and is returned.
func (p *Plugin) Refresh(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastAttempt = p.now()
	svc := p.o.Admin.ServiceName
	rolesChanged := false
	body, base, err := p.admin.roles(ctx, p.roleVersion, p.activation)
	switch {
	case err != nil:
		p.o.Metrics.download(svc, "roles", "failed")
	case body == nil:
		p.o.Metrics.download(svc, "roles", "unchanged")
	default:
		r, perr := ParseRoles(body)
		if perr != nil {
			err = fmt.Errorf("roles from %s: %w", base, perr)
			p.o.Metrics.download(svc, "roles", "failed")
			break
		}
		p.o.Metrics.download(svc, "roles", "updated")
		p.roles, p.roleVersion, rolesChanged = r, r.Version(), true
		p.save(p.cache.roles, body)
	}
	if err != nil {
		p.lastErr = fmt.Errorf("ranger: roles of service %s: %w", svc, err)
		p.log.Warn("ranger: roles download failed; the last roles stay in force", "service", svc, "err", err)
		// policies are still asked for: they may not use roles
	}
	roleErr := err
	body, base, err = p.admin.policies(ctx, p.policyVersion, p.activation)
	switch {
	case err != nil:
		p.o.Metrics.download(svc, "policies", "failed")
		p.lastErr = fmt.Errorf("ranger: policies of service %s: %w", svc, err)
		if errors.Is(err, errServiceNotFound) {
			// Ranger renames the cache so that a restart does not enforce a deleted service's policies
			p.disableCache()
			p.policies, p.policyVersion = nil, -1
			p.engine.Store(nil)
			p.blocked = fmt.Errorf("service %s is unknown to Ranger Admin: %w", svc, err)
		}
		if rolesChanged {
			p.publish()
		}
		return p.lastErr
	case body == nil:
		p.o.Metrics.download(svc, "policies", "unchanged")
		if rolesChanged {
			p.publish()
		}
	default:
		sp, perr := ParseServicePolicies(body)
		if perr != nil {
			p.o.Metrics.download(svc, "policies", "failed")
			p.lastErr = fmt.Errorf("ranger: policies of service %s from %s: %w", svc, base, perr)
			return p.lastErr
		}
		if sp.ServiceName != svc {
			p.log.Warn("ranger: Admin answered for another service name; using it as "+svc, "got", sp.ServiceName)
			sp.ServiceName = svc
		}
		p.o.Metrics.download(svc, "policies", "updated")
		p.activeURL = base
		p.install(sp, base)
		p.save(p.cache.policies, body)
		p.log.Info("ranger: policies updated", "service", svc, "version", sp.Version(), "from", base)
	}
	p.activeURL = base
	p.lastSuccess = p.now()
	p.o.Metrics.success(svc, p.lastSuccess)
	if roleErr == nil {
		p.lastErr = nil
	}
	return roleErr
}

func (p *Plugin) save(path string, body []byte) {
	if path == "" {
		return
	}
	if err := writeAtomic(path, body); err != nil {
		p.log.Warn("ranger: cannot write the policy cache", "file", path, "err", err)
	}
}

func (p *Plugin) disableCache() {
	if p.cache.policies == "" {
		return
	}
	if _, err := os.Stat(p.cache.policies); err == nil {
		_ = os.Rename(p.cache.policies, fmt.Sprintf("%s_%d", p.cache.policies, p.now().UnixMilli()))
	}
}

// Start refreshes now and then every poll interval until ctx ends; stop
// waits for the loop to end.
func (p *Plugin) Start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTimer(0)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			_ = p.Refresh(ctx)
			t.Reset(p.o.PollInterval)
		}
	}()
	return func() { cancel(); <-done }
}

// Ready is nil when policies are in force; otherwise it says why not
// (Ranger Admin unreachable and no cache, service unknown, policies the
// proxy cannot enforce).
func (p *Plugin) Ready() error {
	if p.engine.Load() != nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.blocked != nil:
		return fmt.Errorf("ranger: not ready: %w", p.blocked)
	case p.lastErr != nil:
		return fmt.Errorf("ranger: not ready: no policies of service %s yet: %w", p.o.Admin.ServiceName, p.lastErr)
	case p.lastAttempt.IsZero():
		return fmt.Errorf("ranger: not ready: the policies of service %s have not been downloaded yet (and ranger.policy.cache.dir holds none)", p.o.Admin.ServiceName)
	default:
		return fmt.Errorf("ranger: not ready: no policies of service %s", p.o.Admin.ServiceName)
	}
}

// Info is the plugin's state for metrics, /readyz and the debug endpoint.
type Info struct {
	ServiceName, ServiceType, AppID string
	Ready                           bool
	NotReady                        string
	PolicyVersion, RoleVersion      int64
	// Source is where the policies in force came from: an Admin URL or
	// "cache <file>".
	Source                               string
	LastAttempt, LastSuccess, LastUpdate time.Time
	LastError                            string
	// Biased lists policies evaluated deny-biased, with why.
	Biased []string
	// IgnoredTagPolicies counts tag-based policies not evaluated.
	IgnoredTagPolicies int
}

// Info reports the plugin's state.
func (p *Plugin) Info() Info {
	e := p.engine.Load()
	ready := p.Ready()
	p.mu.Lock()
	defer p.mu.Unlock()
	in := Info{ServiceName: p.o.Admin.ServiceName, ServiceType: p.o.ServiceType, AppID: p.o.Admin.AppID,
		Ready: ready == nil, PolicyVersion: p.policyVersion, RoleVersion: p.roleVersion, Source: p.source,
		LastAttempt: p.lastAttempt, LastSuccess: p.lastSuccess, LastUpdate: p.lastUpdate}
	if ready != nil {
		in.NotReady = ready.Error()
	}
	if p.lastErr != nil {
		in.LastError = p.lastErr.Error()
	}
	if e != nil {
		in.Biased, in.IgnoredTagPolicies = append([]string(nil), e.biased...), e.ignoredTagPolicies
	}
	return in
}

// Engine is the policy set in force (nil when not ready).
func (p *Plugin) Engine() *Engine { return p.engine.Load() }
