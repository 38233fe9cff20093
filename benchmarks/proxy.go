package benchmarks

import (
	"io"
	"net"
	"sync"
)

// proxy is a loopback TCP proxy in front of one Redis server. Cut drops
// every connection and refuses new ones (they are accepted and closed at
// once, so clients fail fast); Restore lets them through again. It stands
// for a Redis outage without touching the server.
type proxy struct {
	ln       net.Listener
	upstream string

	mu    sync.Mutex // guards down and conns
	down  bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newProxy(upstream string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, upstream: upstream, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			_ = c.Close()
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *proxy) serve(c net.Conn) {
	defer p.wg.Done()
	u, err := dialer.Dial("tcp", p.upstream)
	if err != nil {
		_ = c.Close()
		return
	}
	if !p.track(c, u) {
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(u, c)
	go pipe(c, u)
	<-done
	p.untrack(c, u)
	<-done
}

// track registers both ends, unless the proxy is down (then it closes them).
func (p *proxy) track(c, u net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		_ = c.Close()
		_ = u.Close()
		return false
	}
	p.conns[c], p.conns[u] = struct{}{}, struct{}{}
	return true
}

func (p *proxy) untrack(c, u net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, u)
	p.mu.Unlock()
	_ = c.Close()
	_ = u.Close()
}

// Cut closes every connection and refuses new ones until Restore.
func (p *proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// Restore lets connections through again.
func (p *proxy) Restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// Close stops the proxy and waits for its goroutines.
func (p *proxy) Close() error {
	err := p.ln.Close()
	p.Cut()
	p.wg.Wait()
	return err
}
