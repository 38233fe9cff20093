package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/asidekit/asidekit"
)

// GuardStatser is what NewGuardCollector reads: an *asidekit.Kit.
type GuardStatser interface {
	RedisNodes() []asidekit.RedisNode
}

// guardCollector reports a Kit's node guards.
type guardCollector struct {
	src                    GuardStatser
	nodesDown, down, opens *prometheus.Desc
}

// NewGuardCollector returns a Collector of the state of src's node guards
// (Kit.RedisNodes), read at each scrape without a Redis call, so that it
// reports while Redis is down, with the constant label kit=name:
//
//	asidekit_guard_nodes_down{kit}               nodes whose breaker is open
//	asidekit_guard_node_down{kit,node}           1 while the node's breaker is open
//	asidekit_guard_node_opens_total{kit,node}    times the node's breaker opened
//
// node is the node's address; a Kit without a guard reports nodes_down 0
// and no node. A nil src panics here.
func NewGuardCollector(name string, src GuardStatser) prometheus.Collector {
	if src == nil {
		panic("metrics: NewGuardCollector with a nil source")
	}
	l := prometheus.Labels{"kit": name}
	fq := func(n string) string { return prometheus.BuildFQName(DefaultNamespace, "guard", n) }
	return &guardCollector{
		src:       src,
		nodesDown: prometheus.NewDesc(fq("nodes_down"), "Redis nodes whose breaker is open: calls to them fail at once.", nil, l),
		down:      prometheus.NewDesc(fq("node_down"), "1 while the node's breaker is open.", []string{"node"}, l),
		opens:     prometheus.NewDesc(fq("node_opens_total"), "Times the node's breaker opened.", []string{"node"}, l),
	}
}

func (c *guardCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.nodesDown
	ch <- c.down
	ch <- c.opens
}

func (c *guardCollector) Collect(ch chan<- prometheus.Metric) {
	down := 0
	for _, n := range c.src.RedisNodes() {
		v := 0.0
		if n.Down {
			v, down = 1, down+1
		}
		ch <- prometheus.MustNewConstMetric(c.down, prometheus.GaugeValue, v, n.Addr)
		ch <- prometheus.MustNewConstMetric(c.opens, prometheus.CounterValue, float64(n.Opens), n.Addr)
	}
	ch <- prometheus.MustNewConstMetric(c.nodesDown, prometheus.GaugeValue, float64(down))
}
