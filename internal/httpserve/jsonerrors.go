package httpserve

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// maxErrorText bounds the plain-text error message jsonErrors rewrites; a
// longer text/plain answer is passed on as it is.
const maxErrorText = 4 << 10

// jsonErrors gives an error answer with a plain-text or no body, as
// http.Error, http.ServeMux (404, 405) and WebSocket libraries (426) write
// them, a JSON {"detail": …} body instead, the detail being the text. Every
// other answer passes through untouched.
type jsonErrors struct {
	http.ResponseWriter
	head     bool
	decided  bool // the status is known: passing through or capturing
	capture  bool
	code     int
	text     []byte
	hijacked bool
	// beforeHeader, when set, runs just before the answer's final header
	// is written, and may still change it.
	beforeHeader func(http.Header)
}

// writeHeader writes the final header of the answer.
func (j *jsonErrors) writeHeader(code int) {
	if j.beforeHeader != nil {
		j.beforeHeader(j.Header())
		j.beforeHeader = nil
	}
	j.ResponseWriter.WriteHeader(code)
}

func isPlainOrNone(contentType string) bool {
	return contentType == "" || strings.HasPrefix(contentType, "text/plain")
}

// WriteHeader captures an error answer with a plain-text or no body and
// passes any other on.
func (j *jsonErrors) WriteHeader(code int) {
	if j.decided {
		if !j.capture {
			j.ResponseWriter.WriteHeader(code)
		}
		return
	}
	if code < 200 { // informational: more headers follow
		j.ResponseWriter.WriteHeader(code)
		return
	}
	j.decided = true
	if code >= 400 && !j.head && isPlainOrNone(j.Header().Get("Content-Type")) {
		j.capture, j.code = true, code
		return
	}
	j.writeHeader(code)
}

// Write collects a captured answer's text (up to maxErrorText, beyond which
// the answer is passed on as written) or passes p on.
func (j *jsonErrors) Write(p []byte) (int, error) {
	if !j.decided {
		j.WriteHeader(http.StatusOK)
	}
	if j.capture {
		if len(j.text)+len(p) <= maxErrorText {
			j.text = append(j.text, p...)
			return len(p), nil
		}
		j.release()
	}
	return j.ResponseWriter.Write(p)
}

// release gives up capturing: the answer goes out as the handler wrote it.
func (j *jsonErrors) release() {
	j.capture = false
	j.writeHeader(j.code)
	if len(j.text) > 0 {
		_, _ = j.ResponseWriter.Write(j.text)
	}
	j.text = nil
}

// finish writes a captured answer as {"detail": text}.
func (j *jsonErrors) finish() {
	if !j.capture || j.hijacked {
		return
	}
	detail := strings.TrimSpace(string(j.text))
	detail = strings.TrimSpace(strings.TrimPrefix(detail, strconv.Itoa(j.code)+" "))
	if detail == "" {
		detail = http.StatusText(j.code)
	}
	body, _ := json.Marshal(struct {
		Detail string `json:"detail"`
	}{detail})
	h := j.Header()
	h.Set("Content-Type", "application/json")
	h.Del("X-Content-Type-Options")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	j.writeHeader(j.code)
	_, _ = j.ResponseWriter.Write(body)
}

// Flush sends what is written so far (a captured answer is released first).
func (j *jsonErrors) Flush() {
	if !j.decided {
		j.WriteHeader(http.StatusOK)
	}
	if j.capture {
		j.release()
	}
	_ = http.NewResponseController(j.ResponseWriter).Flush()
}

// Hijack hands the connection over (WebSocket upgrades).
func (j *jsonErrors) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(j.ResponseWriter).Hijack()
	if err == nil {
		j.hijacked = true
	}
	return c, rw, err
}

// Unwrap gives http.ResponseController the underlying writer.
func (j *jsonErrors) Unwrap() http.ResponseWriter { return j.ResponseWriter }
