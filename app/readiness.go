package app

import "github.com/hms-proxy/hms-proxy/monitoring"

// ListenerStatuses reports the Thrift listeners to /readyz
// (monitoring.ListenerSource): one that does not accept connections makes
// this replica NOT_READY.
func (r readiness) ListenerStatuses() []monitoring.ListenerStatus {
	out := make([]monitoring.ListenerStatus, 0, len(r.lis))
	for _, l := range r.lis {
		st := monitoring.ListenerStatus{Name: l.Name(), Serving: l.Serving()}
		if st.Serving {
			st.Address = l.Addr().String()
		}
		out = append(out, st)
	}
	return out
}

var _ monitoring.ListenerSource = readiness{}
