// Package web is ACS's own web UI: plain HTML, CSS and JavaScript modules
// (no build step) under static/, embedded in the binary. acs serve serves
// it at / (unless ACS_WEB_DIR names another frontend); the AWS stacks host
// the same directory from S3 behind CloudFront.
package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var files embed.FS

// FS is the UI's files: index.html at its root, the scripts and styles
// beside it.
func FS() fs.FS {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // static is embedded: it always exists
	}
	return sub
}

// CSP is the Content-Security-Policy the UI's documents need: its own
// scripts and styles only, images from anywhere (a message's images, a
// browser tool's screenshots as data: URLs), and requests to any agent
// server, whose origin is the sandbox's. Package api adds object-src,
// base-uri and frame-ancestors.
const CSP = "default-src 'self'; img-src * data: blob:; connect-src 'self' http: https: ws: wss:; form-action 'self'"
