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
