package configs

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseHiveDuration reads a duration the way Hive's configuration does
// (HiveConf / MetastoreConf toTime): an integer, optionally negative, followed
// by an optional unit, case-insensitive, blanks allowed around it:
//
//	d, day*   h, hour*   m, min*   s, sec*   ms, msec*   us, usec*   ns, nsec*
//
// No unit (or Java's "l" suffix) means defaultUnit. So "600", "600s",
// "600sec", "10min", "10 m" and "1day" are accepted, while "1.5s", "5x" and
// "ten" are rejected, as Hive rejects them. Like Hive, a unit is recognised by
// its prefix ("10 minutes" is ten minutes).
func ParseHiveDuration(value string, defaultUnit time.Duration) (time.Duration, error) {
	v := strings.TrimSpace(value)
	i := 0
	for i < len(v) && (v[i] == '-' || (v[i] >= '0' && v[i] <= '9')) {
		i++
	}
	num, unitText := strings.TrimSpace(v[:i]), strings.ToLower(strings.TrimSpace(v[i:]))
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not an integer followed by an optional time unit")
	}
	unit, ok := hiveTimeUnit(unitText, defaultUnit)
	if !ok && (strings.HasPrefix(unitText, ".") || strings.HasPrefix(unitText, ",")) {
		return 0, fmt.Errorf("fractional values are not accepted (use a smaller unit, e.g. 1500ms)")
	}
	if !ok {
		return 0, fmt.Errorf("invalid time unit %q (use ns, us, ms, s, m, h or d)", unitText)
	}
	if n > math.MaxInt64/int64(unit) || n < math.MinInt64/int64(unit) {
		return 0, fmt.Errorf("out of range")
	}
	return time.Duration(n) * unit, nil
}

func hiveTimeUnit(u string, def time.Duration) (time.Duration, bool) {
	switch {
	case u == "" || u == "l":
		return def, true
	case u == "d" || strings.HasPrefix(u, "day"):
		return 24 * time.Hour, true
	case u == "h" || strings.HasPrefix(u, "hour"):
		return time.Hour, true
	case u == "m" || strings.HasPrefix(u, "min"):
		return time.Minute, true
	case u == "s" || strings.HasPrefix(u, "sec"):
		return time.Second, true
	case u == "ms" || strings.HasPrefix(u, "msec"):
		return time.Millisecond, true
	case u == "us" || strings.HasPrefix(u, "usec"):
		return time.Microsecond, true
	case u == "ns" || strings.HasPrefix(u, "nsec"):
		return time.Nanosecond, true
	}
	return 0, false
}

// formatHiveDuration renders a duration in a form ParseHiveDuration (and
// Hive) reads back exactly: the largest of s, ms, us, ns that divides it.
func formatHiveDuration(d time.Duration) string {
	switch {
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d%time.Millisecond == 0:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	case d%time.Microsecond == 0:
		return strconv.FormatInt(int64(d/time.Microsecond), 10) + "us"
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}
