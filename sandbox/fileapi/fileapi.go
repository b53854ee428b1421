// Package fileapi serves uploads and downloads of workspace files over HTTP.
//
// Files are streamed in both directions and never held in memory. Every
// path is confined to the workspace roots with pathguard.Resolve, and the
// file operation is then performed on the resolved path, so a symbolic link
// inside a root cannot redirect it outside.
package fileapi

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/diskfull"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/internal/pathguard"
)

// MaxUpload is the largest accepted upload, in bytes of file content.
// Routes reads it once, when it is called.
var MaxUpload int64 = 512 << 20

// multipartOverhead is the slack allowed on top of MaxUpload for multipart
// boundaries, part headers and small extra form fields.
const multipartOverhead = 1 << 20

// Routes mounts the file endpoints on mux, each handler wrapped with wrap
// (the caller's authentication; nil means none):
//
//	POST /api/file/upload?path=/abs/file          multipart/form-data, field "file"
//	GET  /api/file/download?path=/abs/file
//	POST /api/file/upload/{path...}               legacy: path without its leading slash
//	GET  /api/file/download/{path...}             legacy: path without its leading slash
//
// Path rules, for every endpoint: a missing path is 422 ("missing" at
// query.path, path.path for the legacy forms); a relative path is 422
// ("value_error", "Value error, Path must be absolute", at the same
// location), and so is a path no file can have (a NUL byte, over
// pathguard.PathMax bytes, a name over pathguard.NameMax bytes, looping
// symbolic links: "Value error, Invalid path: <reason>"); a path that after
// cleaning and resolving the symbolic links of its existing part is not
// inside one of roots() is 403 {"detail": "Path is outside the workspace"}
// (this covers ".." traversal and symbolic links leading out). roots is
// called per request. No error names a path other than relative to the
// roots (pathguard.Rel): a remote client never learns where the workspace
// lies on the host.
//
// Upload streams the first part named "file" to a temporary file in the
// destination directory (creating missing parent directories) and renames
// it over the destination, so readers never see a partial file; an existing
// file keeps its permission bits, a new one gets 0644. Other parts are
// skipped. It answers {"success": true}. A body that is not multipart or has
// no "file" part is 422 ("missing" at body.file); a destination that is a
// directory is 400; content larger than MaxUpload is 413 and leaves the
// destination untouched; a malformed or truncated body is 400; a body that
// stopped arriving (the server's read deadline, os.ErrDeadlineExceeded) is
// 408; a disk (or quota) too full for the file is 507 with Retry-After, and
// the destination is untouched.
//
// Download streams the file with Content-Type application/octet-stream,
// Content-Length, X-File-Size (the file's size, which stays when a
// middleware that rewrites the body drops Content-Length) and
// Content-Disposition attachment; filename="<base>" (plus an RFC 5987
// filename* for names that are not plain ASCII). A
// missing file is 404 {"detail": "File not found: <relative path>"}, a
// directory 400 "Path is a directory: <relative path>", any other
// non-regular file (a FIFO, a socket, a device) 400 "Not a regular file:
// <relative path>"; a FIFO is never opened for reading, so it cannot block
// the handler.
func Routes(mux Mux, roots func() []string, wrap func(http.HandlerFunc) http.Handler) {
	if wrap == nil {
		wrap = func(h http.HandlerFunc) http.Handler { return h }
	}
	h := &handlers{roots: roots, max: MaxUpload}
	mux.Handle("POST /api/file/upload", wrap(h.upload(false)))
	mux.Handle("POST /api/file/upload/{path...}", wrap(h.upload(true)))
	mux.Handle("GET /api/file/download", wrap(h.download(false)))
	mux.Handle("GET /api/file/download/{path...}", wrap(h.download(true)))
}

// Mux is where Routes registers its handlers (an *http.ServeMux, or a
// wrapper that records the patterns).
type Mux interface {
	Handle(pattern string, h http.Handler)
}

type handlers struct {
	roots func() []string
	max   int64
}

// target extracts and confines the path parameter. It returns the requested
// path cleaned, its resolved form and the name messages give it (relative
// to the roots); on failure it has written the response.
func (h *handlers) target(w http.ResponseWriter, r *http.Request, legacy bool) (requested, resolved, name string, ok bool) {
	if legacy {
		seg := r.PathValue("path")
		if seg == "" {
			httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"path", "path"}, Msg: "Field required", Type: "missing"}})
			return "", "", "", false
		}
		requested = "/" + seg
	} else {
		v := httpjson.NewQuery(r).String("path")
		if v == nil {
			httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"query", "path"}, Msg: "Field required", Type: "missing"}})
			return "", "", "", false
		}
		requested = *v
	}
	var roots []string
	if h.roots != nil {
		roots = h.roots()
	}
	resolved, err := pathguard.Resolve(roots, requested)
	if err != nil {
		switch {
		case errors.Is(err, pathguard.ErrNotAbsolute) || errors.Is(err, pathguard.ErrInvalidPath):
			loc := []any{"query", "path"}
			if legacy {
				loc = []any{"path", "path"}
			}
			httpjson.WriteValidation(w, strictjson.Errors{{Loc: loc, Msg: "Value error, " + err.Error(), Type: "value_error"}})
		case errors.Is(err, pathguard.ErrOutsideRoots):
			httpjson.WriteDetail(w, http.StatusForbidden, err.Error())
		default:
			httpjson.WriteDetail(w, http.StatusBadRequest, err.Error())
		}
		return "", "", "", false
	}
	requested = filepath.Clean(requested)
	return requested, resolved, pathguard.Rel(roots, requested), true
}

func missingFile(w http.ResponseWriter) {
	httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"body", "file"}, Msg: "Field required", Type: "missing"}})
}

// drainLimit bounds what a refused upload reads of its body.
const drainLimit = 8 << 20

func (h *handlers) upload(legacy bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// An upload refused before its body is read still reads (a
		// bounded part of) it: otherwise the server closes the connection
		// while the client is still sending, and the client sees a broken
		// pipe instead of the answer.
		defer io.Copy(io.Discard, io.LimitReader(r.Body, drainLimit))
		_, dest, _, ok := h.target(w, r, legacy)
		if !ok {
			return
		}
		if fi, err := os.Stat(dest); err == nil && fi.IsDir() {
			httpjson.WriteDetail(w, http.StatusBadRequest, "Path is a directory")
			return
		}
		limit := h.max + multipartOverhead
		if r.ContentLength > limit {
			tooLarge(w, h.max)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		mr, err := r.MultipartReader()
		if err != nil {
			missingFile(w)
			return
		}
		for {
			part, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				missingFile(w)
				return
			}
			if err != nil {
				bodyError(w, err, h.max)
				return
			}
			if part.FormName() != "file" {
				if _, err := io.Copy(io.Discard, part); err != nil {
					bodyError(w, err, h.max)
					return
				}
				continue
			}
			status, msg := store(dest, part, h.max)
			if status == http.StatusInsufficientStorage {
				httpjson.WriteInsufficientStorage(w, msg)
				return
			}
			if status != http.StatusOK {
				httpjson.WriteDetail(w, status, msg)
				return
			}
			httpjson.WriteJSON(w, http.StatusOK, struct {
				Success bool `json:"success"`
			}{true})
			return
		}
	}
}

func tooLarge(w http.ResponseWriter, max int64) {
	httpjson.WriteDetail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("File larger than %d bytes", max))
}

// bodyError answers a failure to read the request body.
func bodyError(w http.ResponseWriter, err error, max int64) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		tooLarge(w, max)
		return
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		httpjson.WriteBodyError(w, err)
		return
	}
	httpjson.WriteDetail(w, http.StatusBadRequest, "Invalid multipart body: "+err.Error())
}

// errTooLarge marks content beyond the upload limit.
var errTooLarge = errors.New("upload too large")

// store streams src into dest through a temporary file and returns the HTTP
// status and message for the outcome.
func store(dest string, src io.Reader, max int64) (int, string) {
	dir := filepath.Dir(dest)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return http.StatusBadRequest, "Cannot create the parent directory: " + pathErr(err)
	}
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(dest); err == nil {
		if fi.IsDir() {
			return http.StatusBadRequest, "Path is a directory"
		}
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(dest)+".upload-*")
	if err != nil {
		return writeFailed(err, "Cannot create the file: ")
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	n, err := io.Copy(tmp, io.LimitReader(src, max+1))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe) || (err == nil && n > max):
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("File larger than %d bytes", max)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return http.StatusRequestTimeout, "The request body arrived too slowly"
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return writeFailed(err, "Cannot write the file: ")
		}
		return http.StatusBadRequest, "Invalid multipart body: " + err.Error()
	}
	if err := tmp.Chmod(mode); err != nil {
		return writeFailed(err, "Cannot write the file: ")
	}
	if err := tmp.Close(); err != nil {
		return writeFailed(err, "Cannot write the file: ")
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return writeFailed(err, "Cannot write the file: ")
	}
	done = true
	return http.StatusOK, ""
}

// writeFailed is the status and message for a failed write of an upload:
// 507 when the disk (or quota) is full, which the caller answers with
// Retry-After; 500 with what failed otherwise.
func writeFailed(err error, what string) (int, string) {
	if diskfull.Is(err) {
		return http.StatusInsufficientStorage, "Insufficient storage: the disk is full, so the file was not written; free space and retry"
	}
	return http.StatusInternalServerError, what + pathErr(err)
}

// pathErr renders a file-system error without repeating the temporary name.
func pathErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	return err.Error()
}

func (h *handlers) download(legacy bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		requested, src, name, ok := h.target(w, r, legacy)
		if !ok {
			return
		}
		f, fi, status, msg := openRegular(src, name)
		if status != http.StatusOK {
			httpjson.WriteDetail(w, status, msg)
			return
		}
		defer f.Close()
		hdr := w.Header()
		hdr.Set("Content-Type", "application/octet-stream")
		hdr.Set("Content-Disposition", contentDisposition(filepath.Base(requested)))
		hdr.Set("Content-Length", strconv.FormatInt(fi.Size(), 10))
		hdr.Set("X-File-Size", strconv.FormatInt(fi.Size(), 10))
		hdr.Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodHead {
			return
		}
		// A copy error means the client went away or the file shrank; the
		// status line is already sent, so there is nothing left to report.
		_, _ = io.CopyN(w, f, fi.Size())
	}
}

// openRegular opens the regular file src for reading, without blocking on
// a FIFO that was put in its place, and returns it with its information
// (from the open file). Otherwise it returns the HTTP status and message of
// the refusal, naming the file as name.
func openRegular(src, name string) (*os.File, fs.FileInfo, int, string) {
	fi, err := os.Stat(src)
	if err == nil {
		switch {
		case fi.IsDir():
			return nil, nil, http.StatusBadRequest, "Path is a directory: " + name
		case !fi.Mode().IsRegular():
			return nil, nil, http.StatusBadRequest, "Not a regular file: " + name
		}
		var f *os.File
		if f, err = openNonBlocking(src); err == nil {
			// The file may have been replaced after Stat: judge the open one.
			if fi, err = f.Stat(); err == nil && fi.Mode().IsRegular() {
				return f, fi, http.StatusOK, ""
			}
			f.Close()
			if err == nil {
				return nil, nil, http.StatusBadRequest, "Not a regular file: " + name
			}
		}
	}
	if errors.Is(err, fs.ErrNotExist) || isNotDir(err) {
		return nil, nil, http.StatusNotFound, "File not found: " + name
	}
	return nil, nil, http.StatusBadRequest, "Cannot read the file " + name + ": " + pathErr(err)
}

// contentDisposition renders attachment; filename="name", adding an RFC 5987
// filename* parameter when name is not plain printable ASCII.
func contentDisposition(name string) string {
	plain := true
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return `attachment; filename="` + name + `"`
	}
	fallback := strings.Map(func(r rune) rune {
		if r < 0x20 || r >= 0x7f || r == '"' || r == '\\' {
			return '_'
		}
		return r
	}, name)
	return `attachment; filename="` + fallback + `"; filename*=UTF-8''` + rfc5987Escape(name)
}

// rfc5987Escape percent-encodes every byte of s that is not an RFC 5987
// attr-char.
func rfc5987Escape(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
