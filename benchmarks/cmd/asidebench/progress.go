package main

import (
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/asidekit/asidekit/benchmarks"
)

// showAfter is how long a phase runs before its bar appears: short phases
// never draw one.
const showAfter = 2 * time.Second

// bars draws mpb progress bars on a terminal, one per phase that lasts
// longer than showAfter. Each scenario gets its own container (begin/end),
// so that its table is printed after its bars are gone.
type bars struct {
	out io.Writer
	// force draws even when out is not a terminal (-progress always).
	force bool

	mu sync.Mutex    // guards p
	p  *mpb.Progress // the current scenario's container, nil between scenarios
}

func (b *bars) begin() {
	b.mu.Lock()
	opts := []mpb.ContainerOption{mpb.WithOutput(b.out), mpb.WithWidth(40), mpb.WithRefreshRate(200 * time.Millisecond)}
	if b.force {
		opts = append(opts, mpb.WithAutoRefresh())
	}
	b.p = mpb.New(opts...)
	b.mu.Unlock()
}

func (b *bars) end() {
	b.mu.Lock()
	p := b.p
	b.p = nil
	b.mu.Unlock()
	if p != nil {
		p.Wait()
	}
}

// Start implements benchmarks.Progress.
func (b *bars) Start(name string, total int64) benchmarks.Tracker {
	t := &tracker{b: b, name: name, total: total}
	t.timer = time.AfterFunc(showAfter, t.show)
	return t
}

type tracker struct {
	b     *bars
	name  string
	total int64
	timer *time.Timer
	done  atomic.Int64

	mu   sync.Mutex // guards bar and over
	bar  *mpb.Bar
	over bool
}

func (t *tracker) show() {
	t.b.mu.Lock()
	p := t.b.p
	t.b.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.over || p == nil {
		return
	}
	t.bar = p.AddBar(t.total,
		mpb.PrependDecorators(decor.Name(t.name, decor.WC{W: 28, C: decor.DindentRight})),
		mpb.AppendDecorators(decor.Percentage(decor.WC{W: 5}), decor.Elapsed(decor.ET_STYLE_GO, decor.WC{W: 6})),
		mpb.BarRemoveOnComplete(),
	)
	t.bar.SetCurrent(min(t.done.Load(), t.total))
}

func (t *tracker) Add(n int64) {
	c := t.done.Add(n)
	t.mu.Lock()
	if t.bar != nil {
		t.bar.SetCurrent(min(c, t.total))
	}
	t.mu.Unlock()
}

func (t *tracker) Done() {
	t.timer.Stop()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.over = true
	if t.bar != nil {
		t.bar.SetTotal(-1, true)
	}
}
