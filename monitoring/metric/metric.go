// Package metric is the one way hms-proxy's packages define and register
// their Prometheus metrics: a Registrar builds each collector from its name,
// help and labels and registers it with one registry. A collector already
// registered there with the very same definition is shared rather than
// registered twice (two parts built on one registry count into one series);
// one registered under the same name with another definition is an error
// naming the metric. A nil registry registers nothing (tests, parts built
// without metrics).
//
// It imports none of hms-proxy's packages, so any room may use it.
package metric

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Registrar defines metrics on one registry and keeps the first error.
type Registrar struct {
	reg  prometheus.Registerer
	what string // the owner, for errors ("locks", "REST catalog", ...)
	err  error
}

// New returns a registrar for reg (nil: metrics are built, not registered);
// what names the owner in errors.
func New(reg prometheus.Registerer, what string) *Registrar {
	return &Registrar{reg: reg, what: what}
}

// Err is the first registration error.
func (r *Registrar) Err() error { return r.err }

// Must panics on a registration error: for the packages whose metrics are
// defined once at start, where a clash is a programming error.
func (r *Registrar) Must() {
	if r.err != nil {
		panic(r.err)
	}
}

// register registers c, or returns the identical collector registered
// before it.
func register[C prometheus.Collector](r *Registrar, name string, c C) C {
	if r.reg == nil {
		return c
	}
	err := r.reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if got, ok := are.ExistingCollector.(C); ok {
			return got
		}
	}
	if r.err == nil {
		r.err = fmt.Errorf("%s: registering metric %s: %w", r.what, name, err)
	}
	return c
}

// CounterVec defines a counter with labels.
func (r *Registrar) CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return register(r, name, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels))
}

// Counter defines a counter without labels.
func (r *Registrar) Counter(name, help string) prometheus.Counter {
	return register(r, name, prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help}))
}

// GaugeVec defines a gauge with labels.
func (r *Registrar) GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return register(r, name, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels))
}

// Gauge defines a gauge without labels.
func (r *Registrar) Gauge(name, help string) prometheus.Gauge {
	return register(r, name, prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help}))
}

// HistogramVec defines a histogram with labels over buckets.
func (r *Registrar) HistogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return register(r, name, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels))
}
