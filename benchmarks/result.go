package benchmarks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Metric names, shared by every scenario where they apply.
const (
	MetricRequests         = "requests"
	MetricErrors           = "errors"
	MetricDBLoads          = "db_loads"
	MetricDBLoadsPerExpiry = "db_loads_per_expiry"
	MetricExpiries         = "expiries"
	MetricPeakPer100ms     = "peak_db_loads_per_100ms"
	MetricMaxInflight      = "max_inflight_db_loads"
	MetricLoadCap          = "db_load_cap"
	MetricOverloaded       = "overloaded"
	MetricRedisRoundTrips  = "redis_round_trips"
	MetricP50              = "p50_ms"
	MetricP99              = "p99_ms"
	MetricBurstP99         = "burst_p99_ms"
	MetricMax              = "max_ms"
	MetricNsPerOp          = "ns_per_op"
	MetricAllocsPerOp      = "allocs_per_op"
	MetricRatio            = "ratio"
	MetricDuplicates       = "duplicates"
	MetricIDsPerSec        = "ids_per_sec"
	MetricValueBytes       = "value_bytes"
)

// Result is one scenario's outcome: one row per variant.
type Result struct {
	// Scenario is "hit", "penetration", "avalanche", "breakdown" or "seqgen".
	Scenario string
	// Backend describes the backends (Env.Backend).
	Backend string
	// Params are the scenario's sizes, marshalled as JSON.
	Params any
	// Rows hold one row per variant, in run order.
	Rows []Row
	// Notes are remarks printed under the table (e.g. "latencies on the
	// embedded backend are not representative").
	Notes []string
	// Busy is the number of threads a burner process kept spinning during
	// the run (asidebench -busy, asidepeers -busy: one per core), 0 on a
	// machine left quiet. The commands set it; the tables, reports and JSON
	// show it.
	Busy int
	// BusyMode says where the burner ran, for a busy run: "neighbour" (a
	// process session of its own, as a co-tenant; -busy) or "group" (the
	// measured program's session; -busy=group).
	BusyMode string
	// Elapsed is how long the scenario ran, set by the command that ran it
	// (asidebench); the summary shows it. Not in the JSON.
	Elapsed time.Duration
}

// Row is one variant's metrics.
type Row struct {
	// Variant is the variant's name.
	Variant string
	// Notes is the variant's one-line description.
	Notes string
	// Metrics are the variant's figures, in print order.
	Metrics []Metric
	// Timeline is the number of DB loads in each 100 ms bucket from the
	// start of the measured phase (avalanche).
	Timeline []int64
	// Percentiles are latency percentiles for charts (breakdown).
	Percentiles []Percentile
}

// Metric is one named figure of a row.
type Metric struct {
	Name  string
	Value float64
}

// Percentile is the latency at quantile Q (0.5 = median, 1 = max).
type Percentile struct {
	Q       float64
	Latency time.Duration
}

// Set sets metric name to v, appending it if the row has none yet.
func (r *Row) Set(name string, v float64) {
	for i := range r.Metrics {
		if r.Metrics[i].Name == name {
			r.Metrics[i].Value = v
			return
		}
	}
	r.Metrics = append(r.Metrics, Metric{name, v})
}

// Get returns metric name and whether the row has it.
func (r *Row) Get(name string) (float64, bool) {
	for _, m := range r.Metrics {
		if m.Name == name {
			return m.Value, true
		}
	}
	return 0, false
}

// Row returns the row of variant name, or nil.
func (res *Result) Row(name string) *Row {
	for i := range res.Rows {
		if res.Rows[i].Variant == name {
			return &res.Rows[i]
		}
	}
	return nil
}

// MarshalJSON writes {"variant": ..., metric: value, ...} with the metrics
// in print order, then "db_loads_per_100ms" for a timeline.
func (r Row) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"variant":`)
	name, _ := json.Marshal(r.Variant)
	b.Write(name)
	for _, m := range r.Metrics {
		k, _ := json.Marshal(m.Name)
		b.WriteByte(',')
		b.Write(k)
		b.WriteByte(':')
		b.Write(jsonNumber(m.Value))
	}
	if r.Timeline != nil {
		tl, _ := json.Marshal(r.Timeline)
		b.WriteString(`,"db_loads_per_100ms":`)
		b.Write(tl)
	}
	if r.Notes != "" {
		n, _ := json.Marshal(r.Notes)
		b.WriteString(`,"notes":`)
		b.Write(n)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// jsonNumber writes integers without a fraction and other values rounded
// to 4 significant decimals; NaN and infinities become null.
func jsonNumber(v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null")
	}
	b, _ := json.Marshal(roundTo(v, 4))
	return b
}

// roundTo rounds v to d decimals.
func roundTo(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}

// MarshalJSON writes {"scenario", "backend", "busy", "busy_mode",
// "params", "results", "notes"}; "busy" (the burner's spinners) and
// "busy_mode" only for a busy run.
func (res Result) MarshalJSON() ([]byte, error) {
	rows := res.Rows
	if rows == nil {
		rows = []Row{}
	}
	mode := res.BusyMode
	if res.Busy == 0 {
		mode = "" // a quiet run's commands record the burner's mode as "false"
	}
	return json.Marshal(struct {
		Scenario string   `json:"scenario"`
		Backend  string   `json:"backend"`
		Busy     int      `json:"busy,omitempty"`
		BusyMode string   `json:"busy_mode,omitempty"`
		Params   any      `json:"params"`
		Results  []Row    `json:"results"`
		Notes    []string `json:"notes,omitempty"`
	}{res.Scenario, res.Backend, res.Busy, mode, res.Params, rows, res.Notes})
}

// Conditions describes the run's backend and, for a busy run, the burner:
// "redis 127.0.0.1:6379 + postgresql, busy: 2 spinning threads" (a
// neighbour), "…, busy: 2 spinning threads in group" (-busy=group).
func (res *Result) Conditions() string {
	if res.Busy == 0 {
		return res.Backend
	}
	if res.BusyMode == "group" {
		return fmt.Sprintf("%s, busy: %d spinning threads in group", res.Backend, res.Busy)
	}
	return fmt.Sprintf("%s, busy: %d spinning threads", res.Backend, res.Busy)
}
