package faults

import (
	"net"
	"sync"
	"testing"
	"time"
)

// proxy is a TCP proxy between the gateway and Redis that can delay every
// chunk it forwards, drop (read and discard) everything in both
// directions, and cut every open connection.
type proxy struct {
	ln       net.Listener
	upstream string

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	delay time.Duration
	drop  bool
	wg    sync.WaitGroup
}

func startProxy(t testing.TB, upstream string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &proxy{ln: ln, upstream: upstream, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return // listener closed
		}
		up, err := net.DialTimeout("tcp", p.upstream, time.Second)
		if err != nil {
			_ = down.Close()
			continue
		}
		if !p.track(down, up) {
			return
		}
		p.wg.Add(2)
		go p.pipe(up, down)
		go p.pipe(down, up)
	}
}

// track registers a connection pair, or closes it when the proxy is
// closed.
func (p *proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

// pipe copies src to dst chunk by chunk, applying the current fault. It
// ends when either side is closed, and then closes both.
func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	defer p.forget(dst, src)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			delay, drop := p.delay, p.drop
			p.mu.Unlock()
			if delay > 0 {
				time.Sleep(delay) // the injected latency itself
			}
			if !drop {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return // EOF, or a side was closed
		}
	}
}

func (p *proxy) forget(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
		delete(p.conns, c)
	}
}

// set changes the fault applied to every chunk from now on.
func (p *proxy) set(delay time.Duration, drop bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay, p.drop = delay, drop
}

// cut closes every open connection (both sides); new ones are accepted.
func (p *proxy) cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
	return len(p.conns) / 2
}

func (p *proxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
