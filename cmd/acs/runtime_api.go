package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/config"
	"github.com/acs-project/acs/shared/procsandbox"
	"github.com/acs-project/acs/shared/runtimeapi"
)

// runtimeAPI serves process sandboxes over the runtime API protocol
// (shared/runtimeapi): the local stand-in for a Kubernetes runtime when the
// control plane runs as separate processes (the AWS functions in tests).
func runtimeAPI(ctx context.Context, args []string) error {
	// The one read of the environment; its error is returned after the
	// flags are parsed (so that -h works without a key).
	cfg, cfgErr := config.Load(os.Getenv, config.Target{Program: config.RuntimeAPIServer})
	fs := flag.NewFlagSet("runtime-api", flag.ExitOnError)
	addr := fs.String("addr", cfg.RuntimeServer.Addr, "listen address (ACS_RUNTIME_ADDR)")
	root := fs.String("root", cfg.RuntimeServer.Root, "directory of the sandboxes (ACS_RUNTIME_ROOT)")
	addrFile := fs.String("addr-file", "", "write the bound address to this file once listening")
	fs.Parse(args)
	if cfgErr != nil {
		return cfgErr
	}
	key := cfg.RuntimeServer.APIKey
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the acs binary: %w", err)
	}
	dir, err := filepath.Abs(*root)
	if err != nil {
		return err
	}
	rt, err := procsandbox.New(procsandbox.Config{Binary: bin, Root: dir})
	if err != nil {
		return err
	}
	defer rt.Close()
	ln, err := listen(*addr, *addrFile)
	if err != nil {
		return err
	}
	slog.Info("runtime api listening", "addr", ln.Addr().String(), "root", dir)
	return serveHTTP(ctx, ln, runtimeapi.Handler(rt, key, func(image string) acs.SandboxSpec {
		return acs.SandboxSpec{ID: image}
	}), cfg.HTTP)
}
