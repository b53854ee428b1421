package bashapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/acs-project/acs/sandbox/bashapi"
)

func (e *env) dial(query string, header http.Header) *websocket.Conn {
	e.t.Helper()
	u := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/sockets/bash-events"
	if query != "" {
		u += "?" + query
	}
	conn, _, err := websocket.Dial(testCtx(e.t, 10*time.Second), u, &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		e.t.Fatalf("dial: %v", err)
	}
	e.t.Cleanup(func() { conn.CloseNow() })
	conn.SetReadLimit(64 << 20)
	return conn
}

func readEvent(t *testing.T, conn *websocket.Conn) event {
	t.Helper()
	typ, b, err := conn.Read(testCtx(t, 15*time.Second))
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if typ != websocket.MessageText {
		t.Fatalf("frame type %v", typ)
	}
	return decodeEvent(t, b)
}

func send(t *testing.T, conn *websocket.Conn, frame string) {
	t.Helper()
	if err := conn.Write(testCtx(t, 10*time.Second), websocket.MessageText, []byte(frame)); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// readUntilExit reads frames until the final output of some command.
func readUntilExit(t *testing.T, conn *websocket.Conn) []event {
	t.Helper()
	var evs []event
	for {
		ev := readEvent(t, conn)
		evs = append(evs, ev)
		if ev.Kind == "BashOutput" && ev.ExitCode != nil {
			return evs
		}
	}
}

// syncSocket runs a command over conn and reads until its end, so that the
// socket is known to be subscribed. It returns the command id.
func syncSocket(t *testing.T, conn *websocket.Conn) string {
	t.Helper()
	send(t, conn, `{"command":"true"}`)
	cmd := readEvent(t, conn)
	if cmd.Kind != "BashCommand" {
		t.Fatalf("sync: first frame %s", cmd.raw)
	}
	readUntilFinal(t, conn, cmd.ID)
	return cmd.ID
}

func readUntilFinal(t *testing.T, conn *websocket.Conn, commandID string) {
	t.Helper()
	for {
		ev := readEvent(t, conn)
		if ev.CommandID == commandID && ev.ExitCode != nil {
			return
		}
	}
}

func closeStatus(t *testing.T, conn *websocket.Conn) websocket.StatusCode {
	t.Helper()
	for {
		_, _, err := conn.Read(testCtx(t, 15*time.Second))
		if err != nil {
			return websocket.CloseStatus(err)
		}
	}
}

func TestSocketAuth(t *testing.T) {
	e := newEnv(t, envOpts{authOK: func(k string) bool { return k == "good" }})
	hdr := func(k string) http.Header { return http.Header{"X-Session-Api-Key": {k}} }
	cases := []struct {
		name   string
		query  string
		header http.Header
		frame  string // sent first when set
		ok     bool
	}{
		{name: "query", query: "session_api_key=good", ok: true},
		{name: "header", header: hdr("good"), ok: true},
		{name: "first frame", frame: `{"type":"auth","session_api_key":"good"}`, ok: true},
		{name: "bad query", query: "session_api_key=bad"},
		{name: "bad header", header: hdr("bad")},
		{name: "bad first frame", frame: `{"type":"auth","session_api_key":"bad"}`},
		{name: "request as first frame", frame: `{"command":"echo hi"}`},
		{name: "garbage first frame", frame: `hello`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			conn := e.dial(tc.query, tc.header)
			if tc.frame != "" {
				send(t, conn, tc.frame)
			}
			if !tc.ok {
				if st := closeStatus(t, conn); st != 4001 {
					t.Fatalf("close status %d, want 4001", st)
				}
				return
			}
			// Authenticated: a command sent on the socket runs; a later
			// auth frame is ignored.
			send(t, conn, `{"type":"auth","session_api_key":"good"}`)
			send(t, conn, `{"command":"echo authed"}`)
			evs := readUntilExit(t, conn)
			if evs[0].Kind != "BashCommand" || deref(evs[0].Command) != "echo authed" {
				t.Fatalf("first frame %s", evs[0].raw)
			}
		})
	}
	t.Run("no key in time", func(t *testing.T) {
		e.t = t
		defer bashapi.SetAuthTimeout(300 * time.Millisecond)()
		conn := e.dial("", nil)
		begin := time.Now()
		if st := closeStatus(t, conn); st != 4001 {
			t.Fatalf("close status %d, want 4001", st)
		}
		if d := time.Since(begin); d < 250*time.Millisecond {
			t.Fatalf("closed after %v, before the auth timeout", d)
		}
	})
	e.t = t
	if cmds, _ := e.search(url.Values{"kind__eq": {"BashCommand"}}); len(cmds) != 3 {
		t.Fatalf("%d commands ran, want 3 (only authenticated ones)", len(cmds))
	}
}

func TestSocketNoAuthNeeded(t *testing.T) {
	for _, name := range []string{"nil", "empty key accepted"} {
		t.Run(name, func(t *testing.T) {
			o := envOpts{}
			if name != "nil" {
				o.authOK = func(k string) bool { return k == "" }
			}
			e := newEnv(t, o)
			conn := e.dial("", nil)
			send(t, conn, `{"command":"echo open"}`)
			evs := readUntilExit(t, conn)
			if stdout, _ := joined(evs[1:]); stdout != "open\n" {
				t.Fatalf("stdout %q", stdout)
			}
		})
	}
}

func TestSocketResendAll(t *testing.T) {
	e := newEnv(t, envOpts{})
	all := fixture(t, e)
	conn := e.dial("resend_mode=all", nil)
	for i, want := range all {
		got := readEvent(t, conn)
		if string(got.raw) != string(want.raw) {
			t.Fatalf("replayed event %d:\n%s\nwant\n%s", i, got.raw, want.raw)
		}
	}
	// Then live events, with no duplicates.
	final := e.execute("echo live", nil, 0)
	live := readUntilExit(t, conn)
	if live[0].Kind != "BashCommand" || live[len(live)-1].ID != final.ID {
		t.Fatalf("live frames %v", ids(live))
	}

	// Without resend_mode, only new events. (A command sent on the socket
	// starts after the socket has subscribed.)
	conn2 := e.dial("", nil)
	send(t, conn2, `{"command":"echo fresh"}`)
	if ev := readEvent(t, conn2); ev.Kind != "BashCommand" || deref(ev.Command) != "echo fresh" {
		t.Fatalf("first frame without resend %s", ev.raw)
	}
}

func TestSocketCommands(t *testing.T) {
	e := newEnv(t, envOpts{})
	conn := e.dial("", nil)
	syncSocket(t, conn)
	watcher := e.dial("", nil) // a second subscriber sees the same events
	readUntilFinal(t, conn, syncSocket(t, watcher))

	send(t, conn, `{"command":"echo one; sleep 0.3; echo two >&2; exit 5","timeout":30}`)
	evs := readUntilExit(t, conn)
	cmd := evs[0]
	if cmd.Kind != "BashCommand" || *cmd.Timeout != 30 {
		t.Fatalf("first frame %s", cmd.raw)
	}
	outs := evs[1:]
	checkChunks(t, outs)
	for _, o := range outs {
		if o.CommandID != cmd.ID {
			t.Fatalf("frame for another command: %s", o.raw)
		}
	}
	if stdout, stderr := joined(outs); stdout != "one\n" || stderr != "two\n" || *outs[len(outs)-1].ExitCode != 5 {
		t.Fatalf("stdout %q stderr %q", stdout, stderr)
	}
	if got := readUntilExit(t, watcher); !equalIDs(got, evs) {
		t.Fatalf("watcher saw %v, want %v", ids(got), ids(evs))
	}

	// Frames that do not decode: a BashError to this socket only.
	for _, frame := range []string{`{"cmd":"x"}`, `{"command":"x","timeout":0}`, `not json`} {
		send(t, conn, frame)
		ev := readEvent(t, conn)
		if ev.Kind != "BashError" || ev.Code != "ValidationError" || ev.Detail == "" || len(ev.ID) != 32 {
			t.Fatalf("%s: got %s", frame, ev.raw)
		}
	}
	// A bad cwd: a stored BashError that every subscriber sees.
	send(t, conn, `{"command":"true","cwd":"/no/such/dir"}`)
	be := readEvent(t, conn)
	if be.Kind != "BashError" || be.Code != "InvalidCwd" {
		t.Fatalf("bad cwd frame %s", be.raw)
	}
	if ev := readEvent(t, watcher); ev.ID != be.ID {
		t.Fatalf("watcher got %s, want the stored BashError", ev.raw)
	}
	if st, _ := e.do("GET", "/api/bash/bash_events/"+be.ID, ""); st != 200 {
		t.Fatalf("bad cwd error not stored: %d", st)
	}

	// Closing the service closes the sockets with 1001.
	if err := e.svc.Close(); err != nil {
		t.Fatal(err)
	}
	if st := closeStatus(t, conn); st != websocket.StatusGoingAway {
		t.Fatalf("close status %d", st)
	}
}

func equalIDs(a, b []event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID {
			return false
		}
	}
	return true
}
