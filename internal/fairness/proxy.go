package fairness

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// proxy is a loopback TCP proxy the recorder puts between the clients and
// an instance, and between an instance and Redis, to break the network the
// way networks break: it delays bytes, stalls the answers (the command
// ran, its reply comes after the client library's read timeout, so it
// sends the command again), cuts every connection, and refuses new ones
// while it is down.
type proxy struct {
	ln net.Listener

	mu     sync.Mutex
	target string
	down   bool          // refuse (close) new connections
	delay  time.Duration // added before each chunk is written
	conns  map[net.Conn]*link
	wg     sync.WaitGroup
}

// link is one proxied connection's pair of sockets.
type link struct {
	stalled chan struct{} // non-nil: writes wait until it is closed (guarded by proxy.mu)
}

func newProxy(target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]*link{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		target, down := p.target, p.down
		p.mu.Unlock()
		if down {
			reset(c)
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.pipe(c, target)
		}()
	}
}

// pipe copies both ways between c and a new connection to target.
func (p *proxy) pipe(c net.Conn, target string) {
	up, err := net.DialTimeout("tcp", target, time.Second)
	if err != nil {
		reset(c)
		return
	}
	lk := &link{}
	if !p.track(lk, c, up) {
		reset(c)
		reset(up)
		return
	}
	defer p.untrack(c, up)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.copy(up, c, nil) }()
	go func() { defer wg.Done(); p.copy(c, up, lk) }() // answers: these stall
	wg.Wait()
}

// copy moves bytes from src to dst through the faults in force, and closes
// dst's writing side when src ends; with lk, a stall holds them.
func (p *proxy) copy(dst, src net.Conn, lk *link) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			delay := p.delay
			var stalled chan struct{}
			if lk != nil {
				stalled = lk.stalled
			}
			p.mu.Unlock()
			if stalled != nil {
				<-stalled
			}
			if delay > 0 {
				time.Sleep(delay)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				src.Close()
				return
			}
		}
		if err != nil {
			if tc, ok := dst.(*net.TCPConn); ok && errors.Is(err, io.EOF) {
				tc.CloseWrite()
			} else {
				dst.Close()
			}
			return
		}
	}
}

func (p *proxy) track(lk *link, cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return false
	}
	for _, c := range cs {
		p.conns[c] = lk
	}
	return true
}

func (p *proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	for _, c := range cs {
		delete(p.conns, c)
		c.Close()
	}
	p.mu.Unlock()
}

// reset closes c with a RST, as a crashed peer's kernel would answer.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// cut resets every open connection.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		reset(c)
	}
}

// setDown cuts every connection and refuses new ones (true), or lets them
// in again (false).
func (p *proxy) setDown(down bool) {
	p.mu.Lock()
	p.down = down
	p.mu.Unlock()
	if down {
		p.cut()
	}
}

func (p *proxy) retarget(target string) {
	p.mu.Lock()
	p.target = target
	p.mu.Unlock()
}

func (p *proxy) setDelay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// stall holds the answers on the connections open now for d, then
// delivers them (to a client that may have given up on them); requests go
// through at once, and connections opened meanwhile (the client library's
// retry) pass.
func (p *proxy) stall(d time.Duration) {
	release := make(chan struct{})
	var held []*link
	p.mu.Lock()
	for _, lk := range p.conns {
		if lk.stalled == nil {
			lk.stalled = release
			held = append(held, lk)
		}
	}
	p.mu.Unlock()
	time.Sleep(d)
	p.mu.Lock()
	for _, lk := range held {
		lk.stalled = nil
	}
	p.mu.Unlock()
	close(release)
}

func (p *proxy) close() {
	p.ln.Close()
	p.setDown(true)
	p.wg.Wait()
}
