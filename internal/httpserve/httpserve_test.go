package httpserve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/acs-project/acs/internal/httpserve"
)

// bound is how long a test waits for an answer the rules promise within a
// few hundred milliseconds (generous: a loaded machine must not flake). The
// servers under test would otherwise hold the connection for good.
const bound = 10 * time.Second

// serve runs a Server of h with lim on a random local port until the test
// ends and returns its address.
func serve(t *testing.T, h http.Handler, lim httpserve.Limits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- httpserve.New(h, lim).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// testHandler is the handler the tests serve:
//
//	/upload   needs "X-Key: k" (else 401 without reading the body), reads
//	          the whole body and answers {"n": bytes}; a read cut by the
//	          rate rule is 408
//	/hold     tells entered, waits for release, answers 200
//	/big      writes 64 MiB and sends the write error to writeErr
//	/fake     flushes its headers, then writes a body that looks like
//	          net/http's own plain-text 400 answer
//	/late     reads the body, outlives ReadTimeout three times, answers
//	          whether its context survived
//	/ctx      ignores any body, answers whether its context is alive
//	/exact    reads exactly Content-Length bytes (no EOF), answers 200
//	/ws       a WebSocket echo
//	/plain-error, /long-plain-error, /empty-error, /only-get (GET only,
//	          through a ServeMux), /not-mine (http.NotFound): plain-text or
//	          empty error answers
type testHandler struct {
	lim      httpserve.Limits
	entered  chan struct{}
	release  chan struct{}
	writeErr chan error
}

func newHandler(lim httpserve.Limits) *testHandler {
	return &testHandler{lim: lim, entered: make(chan struct{}, 100), release: make(chan struct{}), writeErr: make(chan error, 1)}
}

const fakeEarly = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request"

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func (h *testHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/upload":
		if r.Header.Get("X-Key") != "k" {
			writeJSON(w, 401, map[string]string{"detail": "Unauthorized"})
			return
		}
		n, err := io.Copy(io.Discard, r.Body)
		var slow *httpserve.SlowBodyError
		switch {
		case errors.As(err, &slow) && errors.Is(err, os.ErrDeadlineExceeded):
			writeJSON(w, http.StatusRequestTimeout, map[string]any{"detail": err.Error(), "n": n})
		case err != nil:
			writeJSON(w, 400, map[string]any{"detail": err.Error(), "n": n})
		default:
			writeJSON(w, 200, map[string]any{"n": n})
		}
	case "/hold":
		h.entered <- struct{}{}
		<-h.release
		writeJSON(w, 200, map[string]string{"status": "ok"})
	case "/big":
		chunk := make([]byte, 1<<20)
		var err error
		for i := 0; i < 64 && err == nil; i++ {
			_, err = w.Write(chunk)
		}
		h.writeErr <- err
	case "/fake":
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", strconv.Itoa(len(fakeEarly)))
		w.WriteHeader(200)
		http.NewResponseController(w).Flush()
		io.WriteString(w, fakeEarly)
	case "/late":
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
			writeJSON(w, 500, map[string]string{"detail": "context ended: " + context.Cause(r.Context()).Error()})
		case <-time.After(3 * h.lim.ReadTimeout):
			writeJSON(w, 200, map[string]string{"status": "ok"})
		}
	case "/ctx":
		// Ignores any body; answers whether its context is alive.
		if err := r.Context().Err(); err != nil {
			writeJSON(w, 500, map[string]string{"detail": "context ended: " + err.Error()})
			return
		}
		writeJSON(w, 200, map[string]string{"status": "live"})
	case "/exact":
		// Reads exactly Content-Length bytes (never seeing EOF).
		buf := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			writeJSON(w, 400, map[string]string{"detail": err.Error()})
			return
		}
		writeJSON(w, 200, map[string]string{"status": "read"})
	case "/plain-error":
		http.Error(w, "teapot trouble", http.StatusTeapot)
	case "/long-plain-error":
		http.Error(w, strings.Repeat("long ", 2000), http.StatusBadGateway)
	case "/empty-error":
		w.WriteHeader(http.StatusServiceUnavailable)
	case "/only-get":
		m := http.NewServeMux()
		m.HandleFunc("GET /only-get", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, map[string]string{}) })
		m.ServeHTTP(w, r)
	case "/not-mine":
		http.NotFound(w, r)
	case "/ws":
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, data, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if err := c.Write(r.Context(), typ, data); err != nil {
				return
			}
		}
	default:
		writeJSON(w, 404, map[string]string{"detail": "Not Found"})
	}
}

// dial opens a raw connection that fails reads after bound.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetReadDeadline(time.Now().Add(bound))
	return c
}

// dribble writes one byte every interval until stop closes or a write fails.
func dribble(c net.Conn, interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if _, err := c.Write([]byte("x")); err != nil {
				return
			}
		}
	}
}

// answer is a response read off a raw connection.
type answer struct {
	status int
	header http.Header
	body   []byte
	close  bool // the answer said Connection: close
}

func readAnswer(t *testing.T, br *bufio.Reader) answer {
	t.Helper()
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read the answer's body: %v", err)
	}
	return answer{status: res.StatusCode, header: res.Header, body: b, close: res.Close}
}

// wantJSONDetail fails unless a is a JSON {"detail": "..."} answer with
// status code whose detail contains want.
func wantJSONDetail(t *testing.T, a answer, code int, want string) {
	t.Helper()
	if a.status != code {
		t.Fatalf("status %d, want %d: %s", a.status, code, a.body)
	}
	if ct := a.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var v struct {
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal(a.body, &v); err != nil || v.Detail == "" {
		t.Fatalf("body %q is not {\"detail\": …} (%v)", a.body, err)
	}
	if !strings.Contains(v.Detail, want) {
		t.Errorf("detail %q does not contain %q", v.Detail, want)
	}
}

// wantClosed fails unless the server closes c (after any answer already read
// from br).
func wantClosed(t *testing.T, c net.Conn, br *bufio.Reader) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(bound))
	if _, err := io.Copy(io.Discard, br); err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		t.Fatalf("the connection was not closed: %v", err)
	}
}

func isReset(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe"))
}

func testLimits() httpserve.Limits {
	return httpserve.Limits{MaxConnections: 50, ReadTimeout: 300 * time.Millisecond, MinBodyRate: 4 << 10,
		WriteTimeout: 300 * time.Millisecond, IdleTimeout: 5 * time.Second, MaxHeaderBytes: 1024}
}

func TestBodyMustKeepArriving(t *testing.T) {
	lim := testLimits()
	addr := serve(t, newHandler(lim), lim)
	const size = 1000
	head := fmt.Sprintf("POST /upload HTTP/1.1\r\nHost: x\r\nX-Key: k\r\nContent-Length: %d\r\n\r\n", size)
	for _, tc := range []struct {
		name string
		send func(c net.Conn, stop <-chan struct{})
	}{
		// One byte every 50 ms never stalls for ReadTimeout, but its average
		// rate is far below MinBodyRate.
		{"dribbled", func(c net.Conn, stop <-chan struct{}) { dribble(c, 50*time.Millisecond, stop) }},
		// Half the body, then nothing.
		{"stalled", func(c net.Conn, _ <-chan struct{}) { c.Write(bytes.Repeat([]byte("x"), size/2)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, addr)
			io.WriteString(c, head)
			stop := make(chan struct{})
			defer close(stop)
			go tc.send(c, stop)
			br := bufio.NewReader(c)
			a := readAnswer(t, br)
			wantJSONDetail(t, a, http.StatusRequestTimeout, "arrived too slowly")
			if !a.close {
				t.Error("the answer lacks Connection: close")
			}
			wantClosed(t, c, br)
		})
	}
}

func TestHonestUploads(t *testing.T) {
	lim := testLimits()
	addr := serve(t, newHandler(lim), lim)
	t.Run("slow link, longer than ReadTimeout in total", func(t *testing.T) {
		// 64 KiB in 4 KiB pieces every 40 ms: about 640 ms, twice ReadTimeout,
		// at 100 KiB/s, well above MinBodyRate.
		const size, piece = 64 << 10, 4 << 10
		c := dial(t, addr)
		fmt.Fprintf(c, "POST /upload HTTP/1.1\r\nHost: x\r\nX-Key: k\r\nContent-Length: %d\r\n\r\n", size)
		start := time.Now()
		tick := time.NewTicker(40 * time.Millisecond)
		defer tick.Stop()
		for sent := 0; sent < size; sent += piece {
			<-tick.C
			if _, err := c.Write(bytes.Repeat([]byte("y"), piece)); err != nil {
				t.Fatalf("after %d bytes: %v", sent, err)
			}
		}
		a := readAnswer(t, bufio.NewReader(c))
		if a.status != 200 || !strings.Contains(string(a.body), fmt.Sprintf(`"n":%d`, size)) {
			t.Fatalf("HTTP %d %s, want 200 with n=%d", a.status, a.body, size)
		}
		if took := time.Since(start); took < lim.ReadTimeout {
			t.Fatalf("the upload took %v, not longer than ReadTimeout (%v): the test proves nothing", took, lim.ReadTimeout)
		}
	})
	t.Run("30 MiB", func(t *testing.T) {
		// With the production limits: the test limits' 300 ms ReadTimeout
		// is shorter than a stall a loaded machine (or -race) can impose
		// between two reads, which is not what this case is about.
		lim := httpserve.DefaultLimits()
		addr := serve(t, newHandler(lim), lim)
		const size = 30 << 20
		req, _ := http.NewRequest("POST", "http://"+addr+"/upload", bytes.NewReader(make([]byte, size)))
		req.Header.Set("X-Key", "k")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 || !strings.Contains(string(b), fmt.Sprintf(`"n":%d`, size)) {
			t.Fatalf("HTTP %d %s, want 200 with n=%d", res.StatusCode, b, size)
		}
	})
	t.Run("handler outlives ReadTimeout after reading the body", func(t *testing.T) {
		res, err := http.Post("http://"+addr+"/late", "text/plain", strings.NewReader("some body"))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 {
			t.Fatalf("HTTP %d %s, want 200", res.StatusCode, b)
		}
	})
}

func TestUnauthenticatedAnsweredWithoutTheBody(t *testing.T) {
	lim := testLimits()
	lim.ReadTimeout = time.Minute // the answer must not come from a timeout
	addr := serve(t, newHandler(lim), lim)
	c := dial(t, addr)
	io.WriteString(c, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nxx")
	stop := make(chan struct{})
	defer close(stop)
	go dribble(c, 20*time.Millisecond, stop)
	br := bufio.NewReader(c)
	a := readAnswer(t, br)
	wantJSONDetail(t, a, http.StatusUnauthorized, "Unauthorized")
	if !a.close {
		t.Error("the answer lacks Connection: close")
	}
	wantClosed(t, c, br)
}

// TestEarlyAnswerKeepsTheConnectionUsable: a request whose small body
// arrived with its headers is answered without the handler reading it (a
// 401, a route that ignores its body): the answer says Connection: close and
// the connection closes. A body read to its declared length (the handler
// never seeing EOF) counts as read: the connection stays open and serves the
// next request with a live context. (The read deadline that cuts an unread
// body used to stay on a connection kept open; net/http's background read,
// started once it had discarded the buffered body, then failed on it, which
// cancels the context of every later request on that connection: under
// load, the next handlers started with their context canceled, a git run or
// an LLM call failing as a 500.)
func TestEarlyAnswerKeepsTheConnectionUsable(t *testing.T) {
	lim := testLimits()
	addr := serve(t, newHandler(lim), lim)
	for _, tc := range []struct {
		name, request string
		status        int
		wantClose     bool
	}{
		{"401 without reading", "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", 401, true},
		{"body ignored", "POST /ctx HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", 200, true},
		{"read to its length", "POST /exact HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", 200, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i < 20; i++ {
				c := dial(t, addr)
				br := bufio.NewReader(c)
				io.WriteString(c, tc.request)
				a := readAnswer(t, br)
				if a.status != tc.status {
					t.Fatalf("first answer %d, want %d: %s", a.status, tc.status, a.body)
				}
				if a.close != tc.wantClose {
					t.Errorf("first answer: Connection: close is %v, want %v", a.close, tc.wantClose)
				}
				if a.close {
					wantClosed(t, c, br)
					continue
				}
				io.WriteString(c, "GET /ctx HTTP/1.1\r\nHost: x\r\n\r\n")
				if a := readAnswer(t, br); a.status != 200 {
					t.Fatalf("the next request on the connection: %d %s", a.status, a.body)
				}
			}
		})
	}
}

func TestConnectionCap(t *testing.T) {
	lim := testLimits()
	lim.MaxConnections = 3
	lim.ReadTimeout = time.Minute
	h := newHandler(lim)
	addr := serve(t, h, lim)

	// Three connections hold requests in flight.
	held := hold(t, h, addr, 3)
	// A fourth is answered 503 at once.
	c := dial(t, addr)
	io.WriteString(c, "GET /upload HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	a := readAnswer(t, br)
	wantJSONDetail(t, a, http.StatusServiceUnavailable, "Too many connections")
	if a.header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	wantClosed(t, c, br)
	// So is a client of net/http.
	res, err := http.Get("http://" + addr + "/upload")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 503 {
		t.Fatalf("HTTP %d, want 503", res.StatusCode)
	}

	// The held requests finish normally.
	close(h.release)
	for i, br := range held {
		if a := readAnswer(t, br); a.status != 200 {
			t.Fatalf("held request %d: HTTP %d %s", i, a.status, a.body)
		}
	}
	// Those three connections are idle keep-alives now: a new connection
	// takes the place of one (the server may not have marked them idle yet
	// when the first attempt arrives).
	deadline := time.Now().Add(bound)
	for {
		res, err := http.Get("http://" + addr + "/nothing")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == 404 {
			break
		}
		if res.StatusCode != 503 || time.Now().After(deadline) {
			t.Fatalf("HTTP %d with three idle keep-alive connections at the cap, want 404", res.StatusCode)
		}
	}
}

func TestServerErrorsAreJSON(t *testing.T) {
	lim := testLimits()
	addr := serve(t, newHandler(lim), lim)
	for _, tc := range []struct {
		name, request string
		code          int
		detail        string
	}{
		{"headers too large", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("b", 16<<10) + "\r\n\r\n",
			431, "must fit in 1024 bytes"},
		{"malformed request line", "NONSENSE\r\n\r\n", 400, "Bad Request"},
		{"malformed header", "GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", 400, "Bad Request"},
		{"missing host", "GET / HTTP/1.1\r\n\r\n", 400, "missing required Host header"},
		{"unsupported version", "GET / HTTP/3.0\r\nHost: x\r\n\r\n", 505, "HTTP Version Not Supported"},
		{"unsupported transfer encoding", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "Unsupported transfer encoding"},
		{"unsupported expectation", "GET / HTTP/1.1\r\nHost: x\r\nExpect: wonders\r\n\r\n", 417, "Expectation Failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, addr)
			io.WriteString(c, tc.request)
			br := bufio.NewReader(c)
			a := readAnswer(t, br)
			wantJSONDetail(t, a, tc.code, tc.detail)
			if cl := a.header.Get("Content-Length"); cl != strconv.Itoa(len(a.body)) {
				t.Errorf("Content-Length %q for a %d-byte body", cl, len(a.body))
			}
			wantClosed(t, c, br)
		})
	}
	for _, tc := range []struct {
		name, request string
		code          int
		detail        string
		header        [2]string
	}{
		{"http.Error", "GET /plain-error HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusTeapot, "teapot trouble", [2]string{}},
		{"empty error body", "GET /empty-error HTTP/1.1\r\nHost: x\r\n\r\n", 503, "Service Unavailable", [2]string{}},
		{"ServeMux 405", "POST /only-get HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 405, "Method Not Allowed", [2]string{"Allow", "GET, HEAD"}},
		{"http.NotFound", "GET /not-mine HTTP/1.1\r\nHost: x\r\n\r\n", 404, "page not found", [2]string{}},
		{"WebSocket without upgrade", "GET /ws HTTP/1.1\r\nHost: x\r\n\r\n", 426, "WebSocket protocol violation", [2]string{"Upgrade", "websocket"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, addr)
			io.WriteString(c, tc.request)
			a := readAnswer(t, bufio.NewReader(c))
			wantJSONDetail(t, a, tc.code, tc.detail)
			if cl := a.header.Get("Content-Length"); cl != strconv.Itoa(len(a.body)) {
				t.Errorf("Content-Length %q for a %d-byte body", cl, len(a.body))
			}
			if tc.header[0] != "" && a.header.Get(tc.header[0]) != tc.header[1] {
				t.Errorf("%s: %q, want %q", tc.header[0], a.header.Get(tc.header[0]), tc.header[1])
			}
		})
	}
	t.Run("OPTIONS * with a dribbled body", func(t *testing.T) {
		// net/http's own handler for it would read the body without a
		// deadline.
		c := dial(t, addr)
		io.WriteString(c, "OPTIONS * HTTP/1.1\r\nHost: x\r\nContent-Length: 4000\r\n\r\nx")
		stop := make(chan struct{})
		defer close(stop)
		go dribble(c, 20*time.Millisecond, stop)
		br := bufio.NewReader(c)
		if a := readAnswer(t, br); a.status != 200 || len(a.body) != 0 {
			t.Fatalf("HTTP %d %q, want 200 with no body", a.status, a.body)
		}
		wantClosed(t, c, br)
	})
	t.Run("a long plain-text error is passed on whole", func(t *testing.T) {
		res, err := http.Get("http://" + addr + "/long-plain-error")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if want := strings.Repeat("long ", 2000) + "\n"; res.StatusCode != 502 || string(b) != want {
			t.Fatalf("HTTP %d with %d bytes, want 502 with the %d bytes written", res.StatusCode, len(b), len(want))
		}
	})
	t.Run("malformed second request on a keep-alive connection", func(t *testing.T) {
		c := dial(t, addr)
		io.WriteString(c, "GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(c)
		wantJSONDetail(t, readAnswer(t, br), 404, "Not Found")
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n")
		wantJSONDetail(t, readAnswer(t, br), 400, "Bad Request")
	})
	t.Run("a handler's body that looks like one is left alone", func(t *testing.T) {
		res, err := http.Get("http://" + addr + "/fake")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 || string(b) != fakeEarly {
			t.Fatalf("HTTP %d %q, want 200 %q", res.StatusCode, b, fakeEarly)
		}
	})
}

func TestStalledReaderIsCut(t *testing.T) {
	lim := testLimits()
	h := newHandler(lim)
	addr := serve(t, h, lim)
	c := dial(t, addr)
	// Ask for 64 MiB and read none of it.
	io.WriteString(c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
	select {
	case err := <-h.writeErr:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the handler's write ended with %v, want a deadline error", err)
		}
	case <-time.After(bound):
		t.Fatal("a client that reads nothing still holds the handler")
	}
}

func TestWebSocketOutlivesTimeouts(t *testing.T) {
	lim := testLimits()
	addr := serve(t, newHandler(lim), lim)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	var wg sync.WaitGroup
	for i := range 3 {
		// Quiet for longer than ReadTimeout and WriteTimeout: on purpose,
		// a hijacked connection has no such deadlines.
		time.Sleep(2 * lim.ReadTimeout)
		msg := bytes.Repeat([]byte{byte('a' + i)}, 16<<10)
		wg.Add(1)
		go func() { defer wg.Done(); ws.Write(ctx, websocket.MessageBinary, msg) }()
		_, got, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("message %d: echo differs", i)
		}
		wg.Wait()
	}
}

func TestLimitsFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		conns   int
		perIP   int
		timeout time.Duration
		err     string
	}{
		{"defaults", nil, httpserve.DefaultLimits().MaxConnections, httpserve.DefaultMaxConnectionsPerIP, httpserve.DefaultReadTimeout, ""},
		{"set", map[string]string{"ACS_MAX_CONNECTIONS": "7", "ACS_MAX_CONNECTIONS_PER_IP": "3", "ACS_HTTP_READ_TIMEOUT": "2s"},
			7, 3, 2 * time.Second, ""},
		{"zero connections", map[string]string{"ACS_MAX_CONNECTIONS": "0"}, 0, 0, 0, "ACS_MAX_CONNECTIONS"},
		{"zero connections per address", map[string]string{"ACS_MAX_CONNECTIONS_PER_IP": "0"}, 0, 0, 0, "ACS_MAX_CONNECTIONS_PER_IP"},
		{"bad connections per address", map[string]string{"ACS_MAX_CONNECTIONS_PER_IP": "many"}, 0, 0, 0, "ACS_MAX_CONNECTIONS_PER_IP"},
		{"bad duration", map[string]string{"ACS_HTTP_READ_TIMEOUT": "soon"}, 0, 0, 0, "ACS_HTTP_READ_TIMEOUT"},
		{"zero duration", map[string]string{"ACS_HTTP_READ_TIMEOUT": "0"}, 0, 0, 0, "ACS_HTTP_READ_TIMEOUT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := httpserve.LimitsFromEnv(func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l.MaxConnections != tc.conns || l.MaxConnectionsPerIP != tc.perIP || l.ReadTimeout != tc.timeout {
				t.Fatalf("MaxConnections %d, MaxConnectionsPerIP %d, ReadTimeout %v; want %d, %d, %v",
					l.MaxConnections, l.MaxConnectionsPerIP, l.ReadTimeout, tc.conns, tc.perIP, tc.timeout)
			}
		})
	}
}
