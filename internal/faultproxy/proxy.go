// Package faultproxy is a loopback TCP proxy that injects faults into the
// traffic between a client and one server: the chaos suite puts one in
// front of every server of each simulated process, and asidebench's
// avalanche outage cuts one in front of Redis. For tests and benchmarks;
// the library does not import it.
package faultproxy

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy is a loopback TCP proxy in front of one server that injects
// faults into the traffic through it:
//
//   - cut: every connection is closed, new ones are accepted and closed;
//   - stall: bytes are held, in both directions, until the stall ends
//     (held bytes of a connection that closes meanwhile are dropped);
//   - slow: each chunk is delayed, in both directions;
//   - drop commit reply (PostgreSQL): a connection that sends a COMMIT
//     has it delivered, then loses the server's reply and is closed, so
//     the client cannot tell whether its transaction committed;
//   - drop commit (PostgreSQL): a connection that sends a COMMIT loses it
//     and is closed: the server rolls back, and the client cannot tell
//     either.
type Proxy struct {
	ln       net.Listener
	upstream string

	mu      sync.Mutex // guards the fields below
	cut     bool
	stall   bool
	delay   time.Duration
	drop    drop
	changed chan struct{} // closed and replaced on every change
	conns   map[*link]struct{}

	dropped atomic.Int64 // COMMITs, or replies after one, dropped
	wg      sync.WaitGroup
}

// link is one proxied connection: the client's side and the server's.
type link struct {
	c, u      net.Conn
	once      sync.Once
	closed    chan struct{}
	dropReply atomic.Bool // a COMMIT went through: drop the next reply
}

func (l *link) close() {
	l.once.Do(func() {
		close(l.closed)
		_ = l.c.Close()
		_ = l.u.Close()
	})
}

// New starts a proxy on a free loopback port in front of upstream
// (host:port), passing traffic through until a fault is set.
func New(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, upstream: upstream, changed: make(chan struct{}), conns: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients dial instead of the server's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	p.mu.Lock()
	cut := p.cut
	p.mu.Unlock()
	if cut {
		_ = c.Close()
		return
	}
	u, err := net.DialTimeout("tcp", p.upstream, time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	l := &link{c: c, u: u, closed: make(chan struct{})}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		l.close()
		return
	}
	p.conns[l] = struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(l, u, c, true) }()
	go func() { defer wg.Done(); p.pipe(l, c, u, false) }()
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, l)
	p.mu.Unlock()
}

// pipe copies src to dst, chunk by chunk, applying the faults in force.
// up is the client → server direction. A reader of its own watches src,
// so that a side that closes while chunks are held (stalled or delayed)
// closes the link at once: held chunks are dropped, never delivered after
// their sender gave up.
func (p *Proxy) pipe(l *link, dst, src net.Conn, up bool) {
	defer l.close()
	chunks := make(chan []byte, 64)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case chunks <- buf[:n]:
				case <-l.closed:
					return
				}
			}
			if err != nil {
				l.close()
				return
			}
		}
	}()
	for chunk := range chunks {
		if !p.hold(l) {
			return
		}
		if up && bytes.Contains(bytes.ToLower(chunk), []byte("commit")) {
			switch p.dropping() {
			case dropReply:
				l.dropReply.Store(true)
			case dropRequest: // never delivered: the server rolls back when the link closes
				p.dropped.Add(1)
				return
			}
		}
		if !up && l.dropReply.Load() {
			p.dropped.Add(1)
			return
		}
		if _, err := dst.Write(chunk); err != nil {
			return
		}
	}
}

// hold waits out a stall and a delay; it reports false when the link
// closed (or was cut) meanwhile: the chunk is then dropped.
func (p *Proxy) hold(l *link) bool {
	for {
		p.mu.Lock()
		stall, delay, changed := p.stall, p.delay, p.changed
		p.mu.Unlock()
		if !stall {
			if delay > 0 {
				t := time.NewTimer(delay)
				select {
				case <-t.C:
				case <-l.closed:
					t.Stop()
					return false
				}
			}
			select {
			case <-l.closed:
				return false
			default:
				return true
			}
		}
		select {
		case <-changed:
		case <-l.closed:
			return false
		}
	}
}

// Links returns the number of proxied connections still open.
func (p *Proxy) Links() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// drop is what a connection that sends a COMMIT loses.
type drop int

const (
	dropNone    drop = iota
	dropReply        // the server's reply
	dropRequest      // the COMMIT itself
)

func (p *Proxy) dropping() drop {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.drop
}

// set changes the proxy's faults under its lock and wakes held chunks.
func (p *Proxy) set(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f()
	close(p.changed)
	p.changed = make(chan struct{})
	if p.cut {
		for l := range p.conns {
			l.close()
		}
	}
}

// Cut closes every connection and refuses new ones.
func (p *Proxy) Cut() { p.set(func() { p.cut = true }) }

// Stall holds all traffic until Heal.
func (p *Proxy) Stall() { p.set(func() { p.stall = true }) }

// Slow delays every chunk by d until Heal.
func (p *Proxy) Slow(d time.Duration) { p.set(func() { p.delay = d }) }

// DropCommitReplies makes connections that send a COMMIT lose the reply
// and close, until Heal.
func (p *Proxy) DropCommitReplies() { p.set(func() { p.drop = dropReply }) }

// DropCommits makes connections that send a COMMIT lose it and close,
// until Heal: the transaction rolls back, its client cannot tell.
func (p *Proxy) DropCommits() { p.set(func() { p.drop = dropRequest }) }

// Heal ends every fault.
func (p *Proxy) Heal() {
	p.set(func() { p.cut, p.stall, p.delay, p.drop = false, false, 0, dropNone })
}

// Dropped returns the number of COMMITs, and of replies after one,
// dropped.
func (p *Proxy) Dropped() int64 { return p.dropped.Load() }

// Close stops the proxy and waits for its goroutines.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.Cut()
	p.wg.Wait()
	return err
}
