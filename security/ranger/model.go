// Package ranger evaluates Apache Ranger access policies inside the proxy.
//
// It holds what one Ranger plugin needs on its own: the policy download
// from Ranger Admin (the plugin REST API the Java plugin uses, with its local
// policy cache), the roles download, the caller's groups, and an evaluator
// with the semantics of Ranger's policy engine (ranger-plugins-common 2.5.0)
// for the Hive service definition. The Java engine itself is the test oracle
// (oracle_test.go). Wiring into the router is a thin adapter over Plugin.
package ranger

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ServicePolicies is the body of Ranger Admin's policy download
// (/service/plugins/policies/download/{service}) and the plugin's policy
// cache file. Fields the proxy does not evaluate are still read (and kept in
// Raw) so that a cache written by the proxy is the document Admin sent.
type ServicePolicies struct {
	ServiceName   string            `json:"serviceName"`
	ServiceID     *int64            `json:"serviceId,omitempty"`
	PolicyVersion *int64            `json:"policyVersion,omitempty"`
	Policies      []*Policy         `json:"policies"`
	ServiceDef    *ServiceDef       `json:"serviceDef,omitempty"`
	AuditMode     string            `json:"auditMode,omitempty"`
	ServiceConfig map[string]string `json:"serviceConfig,omitempty"`
	// TagPolicies are the policies of a linked tag service; evaluating them
	// needs the tag download, which is not built (see docs/ranger.md).
	TagPolicies *TagPolicies `json:"tagPolicies,omitempty"`
	// SecurityZones: zone-specific policies; not evaluated (the plugin is
	// not ready while a download carries zones).
	SecurityZones map[string]json.RawMessage `json:"securityZones,omitempty"`
	// PolicyDeltas are sent only to plugins that ask for them
	// (supportsPolicyDeltas=true); the proxy never does.
	PolicyDeltas []json.RawMessage `json:"policyDeltas,omitempty"`
}

// TagPolicies is the tag service's part of a download.
type TagPolicies struct {
	ServiceName   string    `json:"serviceName"`
	PolicyVersion *int64    `json:"policyVersion,omitempty"`
	Policies      []*Policy `json:"policies"`
}

// Version is the policy version (-1 when absent).
func (s *ServicePolicies) Version() int64 {
	if s == nil || s.PolicyVersion == nil {
		return -1
	}
	return *s.PolicyVersion
}

// Policy is one Ranger policy (RangerPolicy).
type Policy struct {
	ID                   *int64                       `json:"id,omitempty"`
	GUID                 string                       `json:"guid,omitempty"`
	IsEnabled            *bool                        `json:"isEnabled,omitempty"`
	Version              *int64                       `json:"version,omitempty"`
	Service              string                       `json:"service,omitempty"`
	Name                 string                       `json:"name"`
	PolicyType           *int                         `json:"policyType,omitempty"`
	PolicyPriority       *int                         `json:"policyPriority,omitempty"`
	Description          string                       `json:"description,omitempty"`
	IsAuditEnabled       *bool                        `json:"isAuditEnabled,omitempty"`
	Resources            map[string]*PolicyResource   `json:"resources"`
	AdditionalResources  []map[string]*PolicyResource `json:"additionalResources,omitempty"`
	Conditions           []*Condition                 `json:"conditions,omitempty"`
	PolicyItems          []*PolicyItem                `json:"policyItems,omitempty"`
	DenyPolicyItems      []*PolicyItem                `json:"denyPolicyItems,omitempty"`
	AllowExceptions      []*PolicyItem                `json:"allowExceptions,omitempty"`
	DenyExceptions       []*PolicyItem                `json:"denyExceptions,omitempty"`
	DataMaskPolicyItems  []json.RawMessage            `json:"dataMaskPolicyItems,omitempty"`
	RowFilterPolicyItems []json.RawMessage            `json:"rowFilterPolicyItems,omitempty"`
	ServiceType          string                       `json:"serviceType,omitempty"`
	Options              map[string]any               `json:"options,omitempty"`
	ValiditySchedules    []*ValiditySchedule          `json:"validitySchedules,omitempty"`
	PolicyLabels         []string                     `json:"policyLabels,omitempty"`
	ZoneName             string                       `json:"zoneName,omitempty"`
	IsDenyAllElse        *bool                        `json:"isDenyAllElse,omitempty"`
}

// Policy types (RangerPolicy.POLICY_TYPE_*).
const (
	PolicyTypeAccess    = 0
	PolicyTypeDataMask  = 1
	PolicyTypeRowFilter = 2
	PolicyTypeAudit     = 3
)

// Policy priorities.
const (
	PriorityNormal   = 0
	PriorityOverride = 1
)

func (p *Policy) enabled() bool     { return p.IsEnabled == nil || *p.IsEnabled }
func (p *Policy) denyAllElse() bool { return p.IsDenyAllElse != nil && *p.IsDenyAllElse }

func (p *Policy) id() int64 {
	if p.ID == nil {
		return -1
	}
	return *p.ID
}

func (p *Policy) priority() int {
	if p.PolicyPriority == nil {
		return PriorityNormal
	}
	return *p.PolicyPriority
}

func (p *Policy) policyType() int {
	if p.PolicyType == nil {
		return PolicyTypeAccess
	}
	return *p.PolicyType
}

// PolicyResource is the values of one resource in a policy.
type PolicyResource struct {
	Values      []*string `json:"values"`
	IsExcludes  bool      `json:"isExcludes"`
	IsRecursive bool      `json:"isRecursive"`
}

// PolicyItem is an allow, deny or exception item.
type PolicyItem struct {
	Accesses      []*ItemAccess `json:"accesses,omitempty"`
	Users         []*string     `json:"users,omitempty"`
	Groups        []*string     `json:"groups,omitempty"`
	Roles         []*string     `json:"roles,omitempty"`
	Conditions    []*Condition  `json:"conditions,omitempty"`
	DelegateAdmin bool          `json:"delegateAdmin"`
}

// ItemAccess is one access type of an item.
type ItemAccess struct {
	Type      string `json:"type"`
	IsAllowed *bool  `json:"isAllowed,omitempty"`
}

func (a *ItemAccess) allowed() bool { return a.IsAllowed == nil || *a.IsAllowed }

// Condition is a custom condition (not evaluated: see compile.go).
type Condition struct {
	Type   string   `json:"type"`
	Values []string `json:"values"`
}

// ValiditySchedule limits when a policy applies.
type ValiditySchedule struct {
	StartTime   string            `json:"startTime,omitempty"`
	EndTime     string            `json:"endTime,omitempty"`
	TimeZone    string            `json:"timeZone,omitempty"`
	Recurrences []json.RawMessage `json:"recurrences,omitempty"`
}

// ServiceDef is the part of a Ranger service definition evaluation needs.
type ServiceDef struct {
	ID          *int64           `json:"id,omitempty"`
	Name        string           `json:"name"`
	Resources   []*ResourceDef   `json:"resources"`
	AccessTypes []*AccessTypeDef `json:"accessTypes"`
	Options     StringMap        `json:"options,omitempty"`
	// PolicyConditions are the custom conditions the definition knows; a
	// condition of another type is ignored by Ranger's engine.
	PolicyConditions []*ConditionDef `json:"policyConditions,omitempty"`
	// MarkerAccessTypes (Ranger 2.5) also carry implied grants.
	MarkerAccessTypes []*AccessTypeDef `json:"markerAccessTypes,omitempty"`
}

// ResourceDef is one resource of a service definition.
type ResourceDef struct {
	Name               string    `json:"name"`
	Level              int       `json:"level"`
	Parent             string    `json:"parent"`
	Matcher            string    `json:"matcher,omitempty"`
	MatcherOptions     StringMap `json:"matcherOptions,omitempty"`
	IsValidLeaf        *bool     `json:"isValidLeaf,omitempty"`
	ExcludesSupported  *bool     `json:"excludesSupported,omitempty"`
	RecursiveSupported *bool     `json:"recursiveSupported,omitempty"`
}

// ConditionDef names a custom condition of a service definition.
type ConditionDef struct {
	Name string `json:"name"`
}

// AccessTypeDef is one access type and what it implies.
type AccessTypeDef struct {
	Name          string   `json:"name"`
	ImpliedGrants []string `json:"impliedGrants,omitempty"`
}

// Roles is the body of the roles download (RangerRoles).
type Roles struct {
	ServiceName string  `json:"serviceName,omitempty"`
	RoleVersion *int64  `json:"roleVersion,omitempty"`
	RangerRoles []*Role `json:"rangerRoles,omitempty"`
}

// Version is the role version (-1 when absent).
func (r *Roles) Version() int64 {
	if r == nil || r.RoleVersion == nil {
		return -1
	}
	return *r.RoleVersion
}

// Role is a Ranger role: users, groups and other roles.
type Role struct {
	ID     *int64        `json:"id,omitempty"`
	Name   string        `json:"name"`
	Users  []*RoleMember `json:"users,omitempty"`
	Groups []*RoleMember `json:"groups,omitempty"`
	Roles  []*RoleMember `json:"roles,omitempty"`
}

// RoleMember is a member of a role.
type RoleMember struct {
	Name    string `json:"name"`
	IsAdmin bool   `json:"isAdmin"`
}

// ParseServicePolicies reads a download or cache file. Unknown fields are
// ignored, as the Java plugin does; a document that is not a ServicePolicies
// object is an error naming what is wrong.
func ParseServicePolicies(data []byte) (*ServicePolicies, error) {
	var sp ServicePolicies
	if err := json.Unmarshal(data, &sp); err != nil {
		return nil, fmt.Errorf("ranger: policies JSON: %w", err)
	}
	return &sp, nil
}

// ParseRoles reads a roles download or cache file.
func ParseRoles(data []byte) (*Roles, error) {
	var r Roles
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("ranger: roles JSON: %w", err)
	}
	return &r, nil
}

// StringMap is a JSON object of scalars read as strings: service
// definitions write matcher options both as "true" and as true.
type StringMap map[string]string

// UnmarshalJSON implements json.Unmarshaler.
func (m *StringMap) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(StringMap, len(raw))
	for k, v := range raw {
		var s string
		if err := json.Unmarshal(v, &s); err == nil {
			out[k] = s
			continue
		}
		t := strings.TrimSpace(string(v))
		if t == "null" {
			continue // Java's map holds null: the same as absent for every reader
		}
		out[k] = t
	}
	*m = out
	return nil
}

// matcherOption reads a matcher option as ServiceDefUtil.getBooleanOption:
// absent is the default, any other value is true only when it says "true"
// (any case).
func matcherOption(opts StringMap, name string, def bool) bool {
	v, ok := opts[name]
	if !ok {
		return def
	}
	return strings.EqualFold(v, "true")
}

// defOption reads a service-def option as ServiceDefUtil.getBooleanValue:
// absent or empty is the default.
func defOption(opts StringMap, name string, def bool) bool {
	v := opts[name]
	if v == "" {
		return def
	}
	return strings.EqualFold(v, "true")
}

// charOption reads a one-character option (empty: the default).
func charOption(opts StringMap, name string, def uint16) uint16 {
	v := opts[name]
	if v == "" {
		return def
	}
	return utf16At(v, 0)
}

// nonNil drops the JSON nulls of a list, as the Java engine's scrubbing does.
func nonNil(in []*string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if s != nil {
			out = append(out, *s)
		}
	}
	return out
}
