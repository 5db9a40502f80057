package httpx

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func get(t *testing.T, c *http.Client, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Do(req)
}

// redirecting returns a server that redirects every request to a second
// server, and a counter of the requests that reached the second one.
func redirecting(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var reached atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Add(1) }))
	t.Cleanup(target.Close)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/elsewhere", http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	return srv, &reached
}

func TestRedirectIsReturnedNotFollowed(t *testing.T) {
	t.Parallel()
	srv, reached := redirecting(t)
	resp, err := get(t, New(Options{}), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || reached.Load() != 0 {
		t.Fatalf("status %d, target reached %d times; want the 302 itself and no follow", resp.StatusCode, reached.Load())
	}
}

func TestRedirectBecomesTheCallersError(t *testing.T) {
	t.Parallel()
	srv, reached := redirecting(t)
	errRedirect := errors.New("redirect refused")
	var asked string
	c := New(Options{Redirect: func(req *http.Request) error {
		asked = req.URL.Path
		return errRedirect
	}})
	_, err := get(t, c, srv.URL)
	if !errors.Is(err, errRedirect) || asked != "/elsewhere" || reached.Load() != 0 {
		t.Fatalf("err %v, asked %q, target reached %d times", err, asked, reached.Load())
	}
}

func TestNoAmbientProxy(t *testing.T) {
	t.Parallel()
	c := New(Options{})
	if tr := c.Transport.(*boundedTransport).base; tr.Proxy != nil {
		t.Fatal("the transport reads a proxy; it must never")
	}
}

func TestResponseBodyBound(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("x", len(r.URL.Path)-1))
	}))
	t.Cleanup(srv.Close)
	errMine := errors.New("mine")
	for _, tc := range []struct {
		name     string
		tooLarge error
		bytes    int
		want     error
	}{
		{"AtTheBound", nil, 8, nil},
		{"OnePastTheBound", nil, 9, ErrBodyTooLarge},
		{"TheCallersError", errMine, 9, errMine},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := New(Options{MaxBodyBytes: 8, TooLarge: tc.tooLarge})
			resp, err := get(t, c, srv.URL+"/"+strings.Repeat("p", tc.bytes))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if !errors.Is(err, tc.want) || err == nil && tc.want != nil {
				t.Fatalf("read %d bytes, %v; want %v", len(got), err, tc.want)
			}
			if tc.want == nil && len(got) != tc.bytes {
				t.Fatalf("read %d bytes, want %d", len(got), tc.bytes)
			}
		})
	}
}

func TestLimitBody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body string
		over bool
	}{{"", false}, {"1234567", false}, {"12345678", false}, {"123456789", true}, {strings.Repeat("9", 100), true}} {
		got, err := io.ReadAll(LimitBody(io.NopCloser(strings.NewReader(tc.body)), 8, nil))
		if errors.Is(err, ErrBodyTooLarge) != tc.over || !tc.over && (err != nil || string(got) != tc.body) {
			t.Errorf("%q: read %q, %v", tc.body, got, err)
		}
		if tc.over && len(got) != 8 {
			t.Errorf("%q: read %d bytes before the error, want the 8 of the bound", tc.body, len(got))
		}
	}
}

func TestResponseHeaderBound(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Filler", strings.Repeat("f", 8<<10))
	}))
	defer srv.Close()
	if _, err := get(t, New(Options{MaxHeaderBytes: 4 << 10}), srv.URL); err == nil {
		t.Fatal("headers past the bound were accepted")
	}
	resp, err := get(t, New(Options{MaxHeaderBytes: 16 << 10}), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func TestHTTP2OnlyWhenAsked(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	roots := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	for _, h2 := range []bool{false, true} {
		c := New(Options{HTTP2: h2, TLSConfig: &tls.Config{RootCAs: roots}})
		resp, err := get(t, c, srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		proto, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := map[bool]string{false: "HTTP/1.1", true: "HTTP/2.0"}[h2]; string(proto) != want {
			t.Errorf("HTTP2 %v: the server saw %s, want %s", h2, proto, want)
		}
		c.CloseIdleConnections()
	}
}

// TestLimitBodyNeverHandsOutAByteOverTheBound: whatever buffer a reader
// passes, one byte past the bound is never returned: a read with room for
// the bound and one more gets the bound, and the next fails.
func TestLimitBodyNeverHandsOutAByteOverTheBound(t *testing.T) {
	t.Parallel()
	for _, size := range []int{9, 10, 64} {
		body := LimitBody(io.NopCloser(strings.NewReader("123456789")), 8, nil)
		buf := make([]byte, size)
		n, err := body.Read(buf)
		if n != 8 || err != nil {
			t.Fatalf("a %d-byte read of a 9-byte body bound to 8: %d bytes, %v; want 8", size, n, err)
		}
		if n, err := body.Read(buf); n != 0 || !errors.Is(err, ErrBodyTooLarge) {
			t.Fatalf("the read after the bound: %d bytes, %v; want ErrBodyTooLarge", n, err)
		}
	}
}
