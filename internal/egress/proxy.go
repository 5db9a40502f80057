package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Decision is the proxy's verdict on one request.
type Decision struct {
	// Method is CONNECT, or the plain-HTTP request's method.
	Method string `json:"method"`
	// Host and Port are what the request asked for: Host as the request
	// spelled it (case and a trailing dot kept), so that a secret a
	// request carries in a host name is the same text the recorder's
	// masking knows, never one the proxy case-folded past it.
	Host string `json:"host"`
	Port int    `json:"port"`
	// Allowed says whether the proxy let the request through.
	Allowed bool `json:"allowed"`
	// Rule is the allow entry that allowed it ("" when denied).
	Rule string `json:"rule,omitempty"`
	// Reason says why a request was denied, or why an allowed one could
	// not be carried ("" when it was).
	Reason string `json:"reason,omitempty"`

	target string // the host, normalized, that an allowed request dials
	wild   bool   // the rule that allowed it is a wildcard
}

// Resolver resolves names; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options configures a Proxy.
type Options struct {
	// Allow are the allow entries (see ParseAllow).
	Allow []string
	// Resolver resolves the names allowed requests ask for; nil means
	// net.DefaultResolver. The sandboxed command never resolves a name
	// itself.
	Resolver Resolver
	// Record receives every decision, from the goroutine serving the
	// request, before an allowed request is carried; it must be safe for
	// concurrent use. An allowed request whose decision it fails to record
	// (an error) is refused. Nil records nothing.
	Record func(Decision) error
	// DialTimeout bounds each outgoing connection; zero means 10s.
	DialTimeout time.Duration

	headerTimeout time.Duration // how long a request's head may take; zero means 30s
	maxConns      int           // connections served at once; zero means maxConns
}

// maxConns bounds the connections a proxy serves at once: each holds a
// descriptor and a goroutine of the host's, and the sandboxed command
// opens them.
const maxConns = 256

// maxHeadBytes bounds a request's head (request line and headers): the
// command in the sandbox writes it, the host keeps it in memory.
const maxHeadBytes = 64 << 10

// errUnreachable is the kind of a name that resolves only to addresses a
// name may not reach.
var errUnreachable = errors.New("egress: unreachable by name")

// Proxy is an HTTP proxy that carries CONNECT tunnels and plain-HTTP
// requests only to allowed hosts and ports. It is immutable once built.
type Proxy struct {
	rules    []Rule
	resolver Resolver
	record   func(Decision) error
	dial     time.Duration
	head     time.Duration
	conns    int
}

// New builds a proxy; an allow entry that cannot be used is an error
// wrapping ErrInvalidAllow.
func New(o Options) (*Proxy, error) {
	rules, err := ParseAllow(o.Allow)
	if err != nil {
		return nil, err
	}
	p := &Proxy{rules: rules, resolver: o.Resolver, record: o.Record, dial: o.DialTimeout, head: o.headerTimeout, conns: o.maxConns}
	if p.resolver == nil {
		p.resolver = net.DefaultResolver
	}
	if p.dial == 0 {
		p.dial = 10 * time.Second
	}
	if p.head == 0 {
		p.head = 30 * time.Second
	}
	if p.conns == 0 {
		p.conns = maxConns
	}
	return p, nil
}

// Decide is the proxy's verdict on host:port, without recording it.
func (p *Proxy) Decide(method, host string, port int) Decision {
	d := Decision{Method: method, Host: host, Port: port}
	if port < 1 || port > 65535 {
		d.Reason = "the port is not a number from 1 to 65535"
		return d
	}
	var name string
	ip, err := netip.ParseAddr(host)
	if err != nil {
		ip = netip.Addr{}
		var ok bool
		if name, ok = hostName(host); !ok {
			d.Reason = "the host is neither a DNS name nor an IP literal"
			return d
		}
		d.target = name
	} else {
		d.target = ip.String()
	}
	for _, r := range p.rules {
		if r.matches(name, ip, port) {
			d.Allowed, d.Rule, d.wild = true, r.Entry, r.Wildcard
			return d
		}
	}
	if ip.IsValid() {
		d.Reason = "an IP literal no allow entry names"
	} else {
		d.Reason = "no allow entry matches the host and port"
	}
	return d
}

// Serve accepts connections on ln until it fails (closing ln ends it),
// then waits for the connections it serves. Cancelling ctx closes them.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	slots := make(chan struct{}, p.conns)
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		select {
		case slots <- struct{}{}:
		default:
			// Past the bound: refused at once, read nothing of.
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			reply(c, http.StatusServiceUnavailable, fmt.Sprintf("egress: the proxy serves at most %d connections at once", p.conns))
			c.Close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			p.serveConn(ctx, c)
		}()
	}
}

func (p *Proxy) serveConn(ctx context.Context, c net.Conn) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	defer c.Close()
	// The head is bounded in size and in time: the command in the
	// sandbox writes it, and the host holds it and a goroutine meanwhile.
	lr := &io.LimitedReader{R: c, N: maxHeadBytes}
	br := bufio.NewReader(lr)
	_ = c.SetReadDeadline(time.Now().Add(p.head))
	req, err := http.ReadRequest(br)
	if err != nil {
		if lr.N == 0 {
			reply(c, http.StatusRequestHeaderFieldsTooLarge, fmt.Sprintf("egress: a request's head is at most %d bytes", maxHeadBytes))
		}
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	lr.N = math.MaxInt64
	var host, portText string
	if req.Method == http.MethodConnect {
		host, portText, err = net.SplitHostPort(req.RequestURI)
	} else if req.URL.Scheme == "http" && req.URL.Host != "" {
		host, portText = req.URL.Hostname(), req.URL.Port()
		if portText == "" {
			portText = "80"
		}
	} else {
		err = errors.New("not a proxy request")
	}
	if err != nil {
		p.emit(Decision{Method: req.Method, Host: req.Host, Reason: "not a CONNECT or an absolute http:// request"})
		reply(c, http.StatusBadRequest, "egress: only CONNECT host:port and absolute http:// requests are carried")
		return
	}
	port, _ := strconv.Atoi(portText)
	d := p.Decide(req.Method, host, port)
	if !d.Allowed {
		p.emit(d)
		reply(c, http.StatusForbidden, fmt.Sprintf("egress: %s:%d denied: %s", d.Host, d.Port, d.Reason))
		return
	}
	up, err := p.connect(ctx, d.target, port, d.wild)
	if errors.Is(err, errUnreachable) {
		d.Allowed, d.Rule, d.Reason = false, "", err.Error()
		p.emit(d)
		reply(c, http.StatusForbidden, fmt.Sprintf("egress: %s:%d denied: %s", d.Host, d.Port, d.Reason))
		return
	}
	if err != nil {
		d.Reason = "allowed, but " + err.Error()
		p.emit(d)
		reply(c, http.StatusBadGateway, "egress: "+d.Reason)
		return
	}
	defer up.Close()
	// What cannot be recorded is not carried: the decision is kept before
	// a byte of the request leaves.
	if err := p.emit(d); err != nil {
		reply(c, http.StatusForbidden, fmt.Sprintf("egress: %s:%d allowed, but the decision could not be recorded (%v), so it is not carried", d.Host, d.Port, err))
		return
	}
	if req.Method == http.MethodConnect {
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
		// Whatever the client sent after its request is the tunnel's.
		if n := br.Buffered(); n > 0 {
			b, _ := br.Peek(n)
			if _, err := up.Write(b); err != nil {
				return
			}
		}
		splice(c, up)
		return
	}
	// One plain-HTTP request per connection: the proxy carries no
	// keep-alive, so each request is decided on its own.
	req.Close = true
	// The upstream sees the host that was decided, never a Host header
	// naming another (RFC 9112 3.2.2: a proxy replaces it): another
	// virtual host behind an allowed address is another destination.
	host = req.URL.Hostname()
	if req.URL.Port() != "" {
		host = net.JoinHostPort(host, strconv.Itoa(port))
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	req.URL.Host, req.Host = host, ""
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	if err := req.Write(up); err != nil {
		return
	}
	_, _ = io.Copy(c, up)
}

// connect resolves host itself (an IP literal as it is) and dials the
// first address that answers, of those a name may reach (reachable); wild
// says a wildcard entry allowed the name.
func (p *Proxy) connect(ctx context.Context, host string, port int, wild bool) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, p.dial)
	defer cancel()
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else if addrs, err = p.resolver.LookupNetIP(ctx, "ip", host); err != nil || len(addrs) == 0 {
		return nil, fmt.Errorf("the name does not resolve")
	} else {
		all := addrs
		addrs = slices.DeleteFunc(slices.Clone(addrs), func(a netip.Addr) bool { return !reachable(host, a, wild) })
		if len(addrs) == 0 {
			return nil, fmt.Errorf("%w: the name resolves only to %v, which a name may not reach (link-local, unspecified or multicast; or the host's loopback, by a name a wildcard allows outside .localhost); an entry naming the IP literal allows it", errUnreachable, all)
		}
	}
	var d net.Dialer
	var last error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a.Unmap(), uint16(port)).String())
		if err == nil {
			return c, nil
		}
		last = err
	}
	return nil, fmt.Errorf("no address of it answers (%v)", last)
}

// reachable reports whether a name may reach address a. Never a
// link-local one (the cloud metadata service answers at 169.254.169.254),
// an unspecified one (0.0.0.0 reaches the host itself) or a multicast one,
// whatever the name's DNS says. The host's loopback, where the proxy and
// the host's own services listen, only by a name an exact entry allows
// (the operator named it and trusts what its DNS says) or one under
// .localhost (which always means loopback): a wildcard admits names the
// asker picks, under DNS another may run.
func reachable(name string, a netip.Addr, wild bool) bool {
	a = a.Unmap()
	switch {
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast(), a.IsMulticast(), a.IsUnspecified(),
		a.Is4() && a.As4()[0] == 0:
		return false
	case a.IsLoopback():
		return !wild || name == "localhost" || strings.HasSuffix(name, ".localhost")
	}
	return true
}

func (p *Proxy) emit(d Decision) error {
	if p.record != nil {
		return p.record(d)
	}
	return nil
}

func reply(c net.Conn, code int, msg string) {
	_, _ = fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n",
		code, http.StatusText(code), len(msg)+1, msg)
}

// splice copies both ways until either side ends, then closes both.
func splice(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
}
