package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"

	"github.com/chromedp/chromedp"
)

// The README's screenshot of the inspector: the Stacks page of the
// locked production preset, taken by headless Chromium. The PNG carries,
// in a tEXt chunk, the SHA-256 of the HTML and stylesheet it was taken
// of, so a test can tell, without a browser, that the picture still
// shows what the inspector serves.
const (
	screenshotPath = "../../docs/inspector-stacks.png"
	// screenshotKey is the tEXt keyword of the page digest.
	screenshotKey = "pablo-inspect-page-sha256"
	// screenshotWidth and screenshotHeight are the browser window the
	// picture is taken in: the page's top, its first cards.
	screenshotWidth, screenshotHeight = 1200, 1000
	// screenshotUpdate regenerates the picture when set to 1.
	screenshotUpdate = "PABLO_UPDATE_SCREENSHOT"
	// screenshotOut, when set with screenshotUpdate, is where the picture
	// is written instead (to look at it before it replaces the README's).
	screenshotOut = "PABLO_SCREENSHOT_OUT"
	// screenshotMaxBytes keeps the picture a modest part of the
	// repository.
	screenshotMaxBytes = 200 << 10
)

// screenshotArgs is what the README says to run.
func screenshotArgs(workspace string) []string {
	return []string{"--config", "../../presets/production.toml", "--bind", "workspace=" + workspace, "--bind", "preset=../../presets"}
}

// TestReadmeScreenshotShowsTheCurrentStacksPage re-renders the Stacks
// page of `pablo inspect --config presets/production.toml` and checks
// that the README's screenshot was taken of exactly that HTML and
// stylesheet: a change to the templates, the stylesheet, the preset or
// the graph that changes the page fails here until the picture is taken
// again. With PABLO_UPDATE_SCREENSHOT=1 it takes it again, in headless
// Chromium, and rewrites docs/inspector-stacks.png.
func TestReadmeScreenshotShowsTheCurrentStacksPage(t *testing.T) {
	srv := newTestInspector(t, screenshotArgs(t.TempDir()), "")
	digest := pageDigest(t, srv)
	if os.Getenv(screenshotUpdate) == "1" {
		takeScreenshot(t, srv.URL+"/", digest)
	}
	b, err := os.ReadFile(screenshotPath)
	if err != nil {
		t.Fatalf("the README's screenshot: %v (take it with %s=1 go test -run %s ./examples/pablo)", err, screenshotUpdate, t.Name())
	}
	if len(b) > screenshotMaxBytes {
		t.Errorf("the screenshot is %d bytes, more than %d: keep the picture modest", len(b), screenshotMaxBytes)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the screenshot is no PNG: %v", err)
	}
	if cfg.Width != screenshotWidth || cfg.Height != screenshotHeight {
		t.Errorf("the screenshot is %dx%d, want %dx%d", cfg.Width, cfg.Height, screenshotWidth, screenshotHeight)
	}
	got, err := pngText(b, screenshotKey)
	if err != nil {
		t.Fatalf("the screenshot carries no page digest (%v): take it again with %s=1 go test -run %s ./examples/pablo", err, screenshotUpdate, t.Name())
	}
	if got != digest {
		t.Errorf("the README's screenshot is stale: it was taken of the page with digest %s, the inspector now serves %s; take it again with %s=1 go test -run %s ./examples/pablo (needs chromium)", got, digest, screenshotUpdate, t.Name())
	}
}

// pageDigest is the SHA-256 of what the browser draws: the Stacks page
// and the stylesheet.
func pageDigest(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	h := sha256.New()
	for _, path := range []string{"/", "/style.css"} {
		code, body := get(t, srv, path)
		if code != http.StatusOK {
			t.Fatalf("GET %s answered %d", path, code)
		}
		h.Write([]byte(path + "\x00" + body + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// takeScreenshot draws url in headless Chromium, driven with chromedp,
// in a window of the screenshot's size, and writes it, with the page
// digest, to the README's screenshot.
func takeScreenshot(t *testing.T, url, digest string) {
	t.Helper()
	if chromiumPath() == "" {
		t.Fatal("no chromium executable on PATH: install the chromium package (scripts/install-peers.sh debian) to take the screenshot")
	}
	c := newChromium(t)
	c.do("size the window", chromedp.EmulateViewport(screenshotWidth, screenshotHeight, chromedp.EmulateScale(1)))
	c.open(url, "")
	ctx, cancel := context.WithTimeout(c.ctx, chromiumActionTimeout)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("chromium: screenshot: %v", err)
	}
	tagged, err := withPNGText(raw, screenshotKey, digest)
	if err != nil {
		t.Fatal(err)
	}
	out := screenshotPath
	if p := os.Getenv(screenshotOut); p != "" {
		out = p
	}
	if err := os.WriteFile(out, tagged, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes) of the page with digest %s", out, len(tagged), digest)
}

// chromiumPath is the first headless Chromium on PATH, or "".
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// pngSignature opens every PNG file.
var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// withPNGText is b with a tEXt chunk key=value right after its IHDR
// chunk (PNG's first).
func withPNGText(b []byte, key, value string) ([]byte, error) {
	if !bytes.HasPrefix(b, pngSignature) || len(b) < 8+25 || string(b[12:16]) != "IHDR" {
		return nil, errors.New("not a PNG that starts with IHDR")
	}
	end := 8 + 12 + int(binary.BigEndian.Uint32(b[8:12]))
	data := append([]byte(key+"\x00"), value...)
	chunk := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	chunk = append(chunk, "tEXt"...)
	chunk = append(chunk, data...)
	chunk = binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(chunk[4:]))
	out := append([]byte{}, b[:end]...)
	out = append(out, chunk...)
	return append(out, b[end:]...), nil
}

// pngText is the value of the tEXt chunk key of the PNG b, its CRC
// checked.
func pngText(b []byte, key string) (string, error) {
	if !bytes.HasPrefix(b, pngSignature) {
		return "", errors.New("not a PNG")
	}
	for rest := b[8:]; len(rest) >= 12; {
		n := int(binary.BigEndian.Uint32(rest[:4]))
		if len(rest) < 12+n {
			return "", errors.New("a chunk runs past the end of the file")
		}
		typ, data := string(rest[4:8]), rest[8:8+n]
		if typ == "tEXt" {
			if crc32.ChecksumIEEE(rest[4:8+n]) != binary.BigEndian.Uint32(rest[8+n:12+n]) {
				return "", errors.New("a tEXt chunk fails its CRC")
			}
			if k, v, ok := bytes.Cut(data, []byte{0}); ok && string(k) == key {
				return string(v), nil
			}
		}
		if typ == "IEND" {
			break
		}
		rest = rest[12+n:]
	}
	return "", errors.New("no tEXt chunk " + key)
}
