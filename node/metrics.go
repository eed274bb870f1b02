package node

import (
	"encoding/json"
	"net/http"

	"github.com/agentcapsule/capsule/api"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the node's Prometheus metrics, on a registry of its own so
// that several nodes in one process (the demo, tests) do not collide.
type metrics struct {
	reg          *prometheus.Registry
	started      prometheus.Counter
	committed    prometheus.Counter
	rolledBack   prometheus.Counter
	stale        prometheus.Counter
	frozen       prometheus.Histogram
	bytesSent    prometheus.Counter
	blobsSent    prometheus.Counter
	blobsSkipped prometheus.Counter
	steps        prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		reg:          prometheus.NewRegistry(),
		started:      counter("capsule_moves_started_total", "Moves this node started as the source."),
		committed:    counter("capsule_moves_committed_total", "Moves this node started that committed."),
		rolledBack:   counter("capsule_moves_rolled_back_total", "Moves this node started that rolled back."),
		stale:        counter("capsule_moves_stale_total", "Moves that found this node stale (a zombie)."),
		bytesSent:    counter("capsule_move_bytes_sent_total", "Blob and journal bytes this node sent to peers."),
		blobsSent:    counter("capsule_move_blobs_sent_total", "Blobs this node sent to peers."),
		blobsSkipped: counter("capsule_move_blobs_skipped_total", "Blobs a move did not send because the target had them."),
		steps:        counter("capsule_runner_steps_total", "Runner steps taken by agents on this node."),
		frozen: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "capsule_move_frozen_seconds",
			Help:    "Frozen window of committed moves: from freeze to running on the target.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
	}
	m.reg.MustRegister(m.started, m.committed, m.rolledBack, m.stale, m.frozen, m.bytesSent, m.blobsSent, m.blobsSkipped, m.steps)
	return m
}

func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

// handler serves /metrics, /healthz (the process is up) and /readyz: 200
// once the node finished starting and its canary pass passed, else 503; the
// body is the pass's report as JSON (api.Readiness), naming the capsule
// that failed and why.
func (m *metrics) handler(ready func() bool, report func() *api.Readiness) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		rd := report()
		if rd == nil {
			rd = &api.Readiness{Reason: "starting"}
		}
		code := http.StatusOK
		if !ready() {
			code = http.StatusServiceUnavailable
			if rd.Ready { // passed, and still resuming agents or already stopping
				rd = &api.Readiness{Reason: "not serving", Checked: rd.Checked, Counts: rd.Counts}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(rd)
	})
	return mux
}
