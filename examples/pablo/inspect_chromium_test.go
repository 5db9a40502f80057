package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromiumActionTimeout bounds one browser action: a page load, a click
// and the page it leads to, a screenshot.
const chromiumActionTimeout = 60 * time.Second

// chromium is one headless Chromium, driven over the DevTools protocol
// (chromedp), with one tab. The tab ignores the pages' content security
// policy, so that a test of the XSS corpus tries the template engine's
// escaping alone: with the policy in force no script would run anyway.
// Every dialog a page opens, every exception a script throws and every
// console call a script makes is noted; a page may make none.
type chromium struct {
	t   *testing.T
	ctx context.Context
	// shots is where screenshots go: the test's artifact directory
	// (go test -artifacts keeps it).
	shots string

	mu  sync.Mutex
	ran []string
	// navs counts the navigations the tab started, loading says one is
	// under way (started and not yet stopped loading), and abort cancels
	// the read in flight (see read).
	navs    int
	loading bool
	abort   context.CancelFunc
}

// newChromium starts the browser for t, or skips t where no chromium
// executable is installed (scripts/install-peers.sh debian installs it).
func newChromium(t *testing.T) *chromium {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		t.Skip("no chromium executable on PATH: install the chromium package (scripts/install-peers.sh debian) to run the browser test")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1200, 1600))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	c := &chromium{t: t, ctx: ctx, shots: t.ArtifactDir()}
	if err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			c.note("a dialog opened: " + ev.Message)
		case *runtime.EventExceptionThrown:
			c.note("a script threw: " + ev.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			c.note("a script called console." + string(ev.Type))
		case *page.EventFrameRequestedNavigation, *page.EventFrameStartedNavigating, *page.EventFrameStartedLoading:
			c.mu.Lock()
			c.navs++
			c.loading = true
			if c.abort != nil {
				c.abort()
			}
			c.mu.Unlock()
		case *page.EventFrameStoppedLoading:
			c.mu.Lock()
			c.loading = false
			c.mu.Unlock()
		}
	}); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, page.SetBypassCSP, page.SetBypassCSPParams{Enabled: true}); err != nil {
		t.Fatalf("chromium: bypass the content security policy: %v", err)
	}
	return c
}

func (c *chromium) note(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ran = append(c.ran, s)
}

// do runs steps in the tab, within chromiumActionTimeout.
func (c *chromium) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, chromiumActionTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		// Say where the tab is: the page a click led to, its text.
		diag, cancel := context.WithTimeout(c.ctx, 5*time.Second)
		defer cancel()
		loc, _ := chromedp.Run(diag, chromedp.Location())
		body, _ := chromedp.Run(diag, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 2000) : ""`))
		c.t.Fatalf("chromium: %s: %v (the tab is at %s, showing:\n%s)", what, err, loc, body)
	}
}

// open loads url, waits for its body, checks that nothing ran, saves a
// screenshot named shot (when not empty) and returns the DOM as the
// browser built it.
func (c *chromium) open(url, shot string) string {
	c.t.Helper()
	c.do("load "+url, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("body")))
	return c.settled(url, shot)
}

// click clicks the first element sel matches, as a person would, and
// waits for an element wait matches, on the page the click leads to. It
// returns that page's DOM.
func (c *chromium) click(sel, wait, shot string) string {
	c.t.Helper()
	c.do("click "+sel, chromedp.Click(chromedp.CSS(sel)), chromedp.WaitVisible(chromedp.CSS(wait)))
	return c.settled("the page "+sel+" leads to", shot)
}

// read runs reads on one document of the tab, start to end, within
// chromiumActionTimeout. A page that reloads itself (a live task's) can
// replace its document while a read runs, and the browser then answers
// the read with an error, late, or never (a screenshot waits out its
// deadline): a read that a navigation of the tab overlapped is cancelled
// and, once the navigation stopped loading, run again on the new
// document. A read that fails on a document the tab kept fails the test.
func (c *chromium) read(what string, reads func(ctx context.Context) error) {
	c.t.Helper()
	deadline := time.Now().Add(chromiumActionTimeout)
	for {
		// Not during a navigation: the browser holds a command back
		// until the new document is there.
		for {
			c.mu.Lock()
			loading := c.loading
			c.mu.Unlock()
			if !loading || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		ctx, cancel := context.WithDeadline(c.ctx, deadline)
		c.mu.Lock()
		navs := c.navs
		c.abort = cancel
		c.mu.Unlock()
		err := reads(ctx)
		c.mu.Lock()
		moved := c.navs != navs
		c.abort = nil
		c.mu.Unlock()
		cancel()
		switch {
		case !moved && err != nil:
			c.t.Fatalf("chromium: %s: %v", what, err)
		case !moved:
			return
		case time.Now().After(deadline):
			c.t.Fatalf("chromium: %s: the tab kept navigating away (%v)", what, err)
		}
	}
}

// settled checks the page in the tab: no script ran (no payload marked
// the document, no dialog, exception or console call), and returns its
// DOM after saving its screenshot, all of one document.
func (c *chromium) settled(where, shot string) string {
	c.t.Helper()
	var pwned *string
	var png []byte
	var dom string
	c.read("read "+where, func(ctx context.Context) (err error) {
		if pwned, err = chromedp.Run(ctx, chromedp.Evaluate[*string](`document.documentElement.getAttribute("data-pwned")`)); err != nil {
			return err
		}
		if shot != "" {
			if png, err = chromedp.Run(ctx, chromedp.FullScreenshot(100)); err != nil {
				return fmt.Errorf("screenshot: %w", err)
			}
		}
		if dom, err = chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html"))); err != nil {
			return fmt.Errorf("the DOM: %w", err)
		}
		return nil
	})
	if pwned != nil {
		c.t.Errorf("%s: a payload ran in the browser (data-pwned=%q)", where, *pwned)
	}
	c.mu.Lock()
	ran := c.ran
	c.ran = nil
	c.mu.Unlock()
	for _, r := range ran {
		c.t.Errorf("%s: %s: the pages run no script", where, r)
	}
	if shot != "" {
		if err := os.WriteFile(filepath.Join(c.shots, shot+".png"), png, 0o644); err != nil {
			c.t.Fatal(err)
		}
	}
	return dom
}

// text is the rendered text (innerText) of the first element sel
// matches.
func (c *chromium) text(sel string) string {
	c.t.Helper()
	var s string
	c.read("the text of "+sel, func(ctx context.Context) (err error) {
		s, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		return err
	})
	return s
}

// textContent is the text of the page in the tab, hidden text included.
func (c *chromium) textContent() string {
	c.t.Helper()
	var s string
	c.read("the text of the page", func(ctx context.Context) (err error) {
		s, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.textContent`))
		return err
	})
	return s
}

// location is the URL of the page in the tab.
func (c *chromium) location() string {
	c.t.Helper()
	var s string
	c.read("location", func(ctx context.Context) (err error) {
		s, err = chromedp.Run(ctx, chromedp.Location())
		return err
	})
	return s
}

// waitText waits, up to within, for the page in the tab to show want
// (in its rendered text) without the test navigating: the page reloads
// itself. It returns the text it last read.
func (c *chromium) waitText(want string, within time.Duration) (string, bool) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	var last string
	for {
		c.read("the text of the page", func(ctx context.Context) (err error) {
			last, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
			return err
		})
		if strings.Contains(last, want) {
			return last, true
		}
		if time.Now().After(deadline) {
			return last, false
		}
		time.Sleep(100 * time.Millisecond)
	}
}
