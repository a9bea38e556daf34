package ranger

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// roleIndex answers "is this user (with these groups) in role R" from the
// roles download: R's own users and groups and those of every role nested
// in R, the "public" group counting for everyone (RangerRolesUtil and
// RangerAuthContext.getRolesForUserAndGroups).
type roleIndex struct {
	users  map[string]map[string]bool // role -> member users
	groups map[string]map[string]bool // role -> member groups
}

func newRoleIndex(r *Roles) *roleIndex {
	ix := &roleIndex{users: map[string]map[string]bool{}, groups: map[string]map[string]bool{}}
	if r == nil {
		return ix
	}
	byName := map[string]*Role{}
	for _, role := range r.RangerRoles {
		if role != nil {
			if _, dup := byName[role.Name]; !dup {
				byName[role.Name] = role
			}
		}
	}
	for _, role := range r.RangerRoles {
		if role == nil {
			continue
		}
		// role and every role contained in it, transitively
		seen := map[string]bool{role.Name: true}
		all := []*Role{role}
		for i := 0; i < len(all); i++ {
			for _, m := range all[i].Roles {
				if m == nil {
					continue
				}
				if c := byName[m.Name]; c != nil && !seen[c.Name] {
					seen[c.Name] = true
					all = append(all, c)
				}
			}
		}
		us, gs := ix.users[role.Name], ix.groups[role.Name]
		if us == nil {
			us, gs = map[string]bool{}, map[string]bool{}
			ix.users[role.Name], ix.groups[role.Name] = us, gs
		}
		for _, c := range all {
			for _, m := range c.Users {
				if m != nil && m.Name != "" {
					us[m.Name] = true
				}
			}
			for _, m := range c.Groups {
				if m != nil && m.Name != "" {
					gs[m.Name] = true
				}
			}
		}
	}
	return ix
}

func (ix *roleIndex) member(role, user string, hasUser bool, groups []string) bool {
	if hasUser && ix.users[role][user] {
		return true
	}
	gs := ix.groups[role]
	if gs == nil {
		return false
	}
	if gs["public"] {
		return true
	}
	for _, g := range groups {
		if gs[g] {
			return true
		}
	}
	return false
}

// RolesOf lists the roles a user with these groups has (for audit and the
// debug endpoint; evaluation does not build this list).
func (e *Engine) RolesOf(user string, groups []string) []string {
	var out []string
	for role := range e.roles.users {
		if e.roles.member(role, user, user != "", groups) {
			out = append(out, role)
		}
	}
	return out
}

// schedule is a validity schedule: [start, end] read in a time zone.
type schedule struct {
	start, end int64 // epoch ms, 0 = unbounded
}

var scheduleTime = regexp.MustCompile(`^\s*([+-]?\d+)/([+-]?\d+)/([+-]?\d+) ([+-]?\d+):([+-]?\d+):([+-]?\d+)`)

// newSchedule reads a validity schedule as Ranger does: "yyyy/MM/dd
// HH:mm:ss" wall times (out-of-range fields roll over, as Java's lenient
// parser does) in timeZone, or in loc (the JVM's default zone for Ranger)
// when none is given. Recurrences are not evaluated: the caller compiles
// such a policy deny-biased.
func newSchedule(s *ValiditySchedule, loc *time.Location) (*schedule, error) {
	if len(s.Recurrences) > 0 {
		return nil, fmt.Errorf("recurring validity schedules")
	}
	var target *time.Location
	if s.TimeZone != "" {
		z, err := time.LoadLocation(s.TimeZone)
		if err != nil {
			return nil, fmt.Errorf("validity schedule time zone %q unknown", s.TimeZone)
		}
		target = z
	}
	parse := func(v string) (int64, error) {
		if v == "" {
			return 0, nil
		}
		m := scheduleTime.FindStringSubmatch(v)
		if m == nil {
			return 0, fmt.Errorf("validity schedule time %q is not yyyy/MM/dd HH:mm:ss", v)
		}
		var f [6]int
		for i := range f {
			n, err := strconv.Atoi(m[i+1])
			if err != nil {
				return 0, fmt.Errorf("validity schedule time %q: %v", v, err)
			}
			f[i] = n
		}
		local := time.Date(f[0], time.Month(f[1]), f[2], f[3], f[4], f[5], 0, loc).UnixMilli()
		if target != nil && local > 0 {
			// Ranger moves the instant by the difference of the two zones' offsets at it
			_, targetOff := time.UnixMilli(local).In(target).Zone()
			_, defaultOff := time.UnixMilli(local).In(loc).Zone()
			local += int64(defaultOff-targetOff) * 1000
		}
		return local, nil
	}
	st, err := parse(s.StartTime)
	if err != nil {
		return nil, err
	}
	en, err := parse(s.EndTime)
	if err != nil {
		return nil, err
	}
	return &schedule{start: st, end: en}, nil
}

func (s *schedule) applicable(at time.Time) bool {
	ms := at.UnixMilli()
	return (s.start == 0 || ms >= s.start) && (s.end == 0 || ms <= s.end)
}
