package secrets

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
)

// StreamWriter masks a byte stream written in pieces: bytes that could be the
// beginning of a secret are held back until the next Write shows they are not
// (or complete the secret, which is then masked), or until Flush/Close.
type StreamWriter struct {
	m       *Masker
	w       io.Writer
	pending []byte
}

// Writer returns a StreamWriter writing masked bytes to w.
func (m *Masker) Writer(w io.Writer) *StreamWriter { return &StreamWriter{m: m, w: w} }

// Write masks and forwards what is safe to forward. It reports len(p) on
// success; an error is w's.
func (s *StreamWriter) Write(p []byte) (int, error) {
	s.pending = append(s.pending, p...)
	n := s.m.SafeCut(s.pending, len(s.pending))
	if n > 0 {
		if _, err := s.w.Write(s.m.MaskBytes(s.pending[:n])); err != nil {
			return 0, err
		}
		s.pending = append(s.pending[:0], s.pending[n:]...)
	}
	return len(p), nil
}

// Flush writes the held-back bytes (masked): the stream is at an end.
func (s *StreamWriter) Flush() error {
	if len(s.pending) == 0 {
		return nil
	}
	_, err := s.w.Write(s.m.MaskBytes(s.pending))
	s.pending = s.pending[:0]
	return err
}

// Close flushes; it does not close the underlying writer.
func (s *StreamWriter) Close() error { return s.Flush() }

// Middleware masks every HTTP response body: JSON documents, file downloads,
// diffs, event pages. Content-Length is dropped when secrets are known
// (masking changes lengths). Hijacked connections (WebSockets) are the
// handler's to mask.
func (m *Masker) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.Len() == 0 {
			next.ServeHTTP(w, r)
			return
		}
		mw := &maskedResponse{ResponseWriter: w, m: m}
		mw.sw = m.Writer(w)
		defer mw.finish()
		next.ServeHTTP(mw, r)
	})
}

type maskedResponse struct {
	http.ResponseWriter
	m           *Masker
	sw          *StreamWriter
	wroteHeader bool
	hijacked    bool
}

func (w *maskedResponse) WriteHeader(code int) {
	if !w.wroteHeader {
		w.wroteHeader = true
		w.Header().Del("Content-Length")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *maskedResponse) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.sw.Write(p)
}

// Flush forwards held-back bytes only when they cannot start a secret; a
// streaming handler's flush still reaches the client promptly.
func (w *maskedResponse) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *maskedResponse) finish() {
	if !w.hijacked {
		_ = w.sw.Flush()
	}
}

// Hijack lets WebSocket upgrades through.
func (w *maskedResponse) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, http.ErrNotSupported
	}
	w.hijacked = true
	return h.Hijack()
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *maskedResponse) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Handler wraps h so that every log record's message and string attributes
// (including errors and nested groups) are masked.
func (m *Masker) Handler(h slog.Handler) slog.Handler { return &logHandler{m: m, h: h} }

type logHandler struct {
	m *Masker
	h slog.Handler
}

func (l *logHandler) Enabled(ctx context.Context, lv slog.Level) bool { return l.h.Enabled(ctx, lv) }

func (l *logHandler) Handle(ctx context.Context, r slog.Record) error {
	if l.m.Len() == 0 {
		return l.h.Handle(ctx, r)
	}
	nr := slog.NewRecord(r.Time, r.Level, l.m.Mask(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		nr.AddAttrs(l.attr(a))
		return true
	})
	return l.h.Handle(ctx, nr)
}

func (l *logHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, l.m.Mask(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]slog.Attr, len(g))
		for i, x := range g {
			out[i] = l.attr(x)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, l.m.Mask(x.Error()))
		case []byte:
			return slog.String(a.Key, l.m.Mask(string(x)))
		default:
			return slog.String(a.Key, l.m.Mask(v.String()))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func (l *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = l.attr(a)
	}
	return &logHandler{m: l.m, h: l.h.WithAttrs(out)}
}

func (l *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{m: l.m, h: l.h.WithGroup(name)}
}
