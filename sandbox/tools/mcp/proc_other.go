//go:build !unix

package mcp

import (
	"os"
	"os/exec"
)

func setProcessGroup(*exec.Cmd) {}

// killGroup kills p (there are no process groups to signal here).
func killGroup(p *os.Process, hard bool) { _ = p.Kill() }
