package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/acs-project/acs/shared/accounts"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/boltstore"
	"github.com/acs-project/acs/shared/config"
	"github.com/acs-project/acs/shared/fileblob"
	"github.com/acs-project/acs/shared/llmhealth"
	"github.com/acs-project/acs/shared/localqueue"
	"github.com/acs-project/acs/shared/procsandbox"
	"github.com/acs-project/acs/shared/reconciler"
	"github.com/acs-project/acs/shared/sealbox"
	"github.com/acs-project/acs/shared/services"
	"github.com/acs-project/acs/shared/startflow"
	"github.com/acs-project/acs/web"
)

func serve(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	addrFile := fs.String("addr-file", "", "write the bound address to this file once listening")
	fs.Parse(args)
	// The one read of the environment: everything below takes its
	// settings from cfg.
	cfg, err := config.Load(os.Getenv, config.Target{Program: config.Serve})
	if err != nil {
		return err
	}
	local := cfg.Local
	if err := os.MkdirAll(local.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	store, err := boltstore.Open(filepath.Join(local.DataDir, "acs.db"))
	if err != nil {
		return err
	}
	defer store.Close()
	queue, err := localqueue.Open(filepath.Join(local.DataDir, "queue.db"))
	if err != nil {
		return err
	}
	defer queue.Close()
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the acs binary: %w", err)
	}
	key, generated, err := ensureAdmin(ctx, store, local)
	if err != nil {
		return err
	}
	ln, err := listen(local.Addr, *addrFile)
	if err != nil {
		return err
	}
	if strings.HasSuffix(local.Addr, ":0") && local.PublicURLFromAddr {
		cfg.PublicURL = "http://" + ln.Addr().String()
	}

	specs, err := config.ParseSpecs(cfg.Specs, defaultSpecs(bin, local.DataDir))
	if err != nil {
		return err
	}
	sealer, err := secretBox(cfg)
	if err != nil {
		return err
	}
	blobs, err := fileblob.New(filepath.Join(local.DataDir, "blobs"))
	if err != nil {
		return err
	}
	flow := startflow.ConfigFrom(cfg.Common, specs)
	runtime, err := procsandbox.New(procsandbox.Config{Binary: bin, Root: filepath.Join(local.DataDir, "sandboxes"),
		Warm: local.WarmSandboxes, WarmEnv: flow.Sandboxes.SandboxEnv()})
	if err != nil {
		return err
	}
	defer runtime.Close()
	// The warm agent servers start now (in the background: Fill does not
	// wait for them); claims and the reconciler refill the pool.
	if _, err := runtime.Fill(ctx, specs); err != nil {
		slog.Warn("acs serve: warm sandboxes", "error", err)
	}
	llm := llmhealth.NewMonitor(llmhealth.Target{BaseURL: cfg.LLMBaseURL, APIKey: cfg.LLMAPIKey, Model: cfg.LLMModel}, nil)
	worker := startflow.NewWorker(store, queue, runtime, sealer, flow)
	svc := services.Build(services.Adapters{Store: store, Queue: queue, Runtime: runtime, Blobs: blobs, Sealer: sealer,
		Placer: worker, Flow: flow})
	v1 := api.New(api.Deps{Services: svc, SignIn: cfg.SignIn, PublicURL: cfg.PublicURL, Skills: localSkills, LLMHealth: llm.Current})
	pass := reconciler.Pass{Lifecycle: svc.Sandboxes, Worker: worker, TaskTTL: cfg.StartTaskTTL, Pool: runtime}
	wctx, stopWorkers := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	go func() { worker.Run(wctx, local.Workers); done <- struct{}{} }()
	go func() { reconcileLoop(wctx, pass, local.ReconcileInterval); done <- struct{}{} }()
	defer func() { stopWorkers(); <-done; <-done }()

	slog.Info("acs serve: listening", "addr", ln.Addr().String(), "data_dir", local.DataDir, "llm_base_url", or(cfg.LLMBaseURL, "(OpenAI default)"), "llm_model", cfg.LLMModel)
	if generated {
		fmt.Printf("\nACS is running at http://%s\nAPI key (generated; saved in %s): %s\n", ln.Addr(), filepath.Join(local.DataDir, "api_key"), key)
	} else {
		fmt.Printf("\nACS is running at http://%s\n", ln.Addr())
	}
	// The one-time sign-in link (like Jupyter's): single-use and valid for
	// accounts.SignInTokenTTL, so it is printed although keys never are.
	if link, err := v1.IssueSignInLink(ctx, accounts.AdminID); err != nil {
		slog.Warn("acs serve: no sign-in link", "error", err)
	} else {
		fmt.Printf("Sign in from a browser (link valid once, for %v):\n    %s\n", accounts.SignInTokenTTL, link)
	}
	fmt.Println()
	// The LLM check runs in the background (at most llmhealth.Timeout) and
	// again every minute: an unusable LLM is said on the console at once.
	llm.Start(ctx, time.Minute, reportLLMHealth)
	// ACS's own UI, or the frontend of ACS_WEB_DIR.
	site := api.Frontend{Files: web.FS(), CSP: web.CSP}
	if local.WebDir != "" {
		site = api.Frontend{Files: os.DirFS(local.WebDir)} // its needs are unknown
	}
	return serveHTTP(ctx, ln, v1.Site(site), cfg.HTTP)
}

// reportLLMHealth tells the console about each change of the LLM's health:
// a paragraph saying what to set when it is unusable.
func reportLLMHealth(h llmhealth.Health) {
	switch h.Status {
	case llmhealth.StatusUnusable:
		slog.Warn("acs serve: no usable LLM", "detail", h.Detail)
		fmt.Printf("%s\n\n", llmhealth.Advice(h))
	case llmhealth.StatusOK:
		slog.Info("acs serve: LLM reachable", "detail", h.Detail)
	default:
		slog.Info("acs serve: LLM health unknown", "detail", h.Detail)
	}
}

// reconcileLoop runs a reconciler pass (idle rules, stale start tasks)
// every interval until ctx ends.
func reconcileLoop(ctx context.Context, pass reconciler.Pass, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := pass.Run(ctx); err != nil && ctx.Err() == nil {
				slog.Warn("reconcile", "error", err)
			}
		}
	}
}

// secretBox is the sealer of stored secrets: ACS_SECRET_KEY, else a random
// key kept in the data dir.
func secretBox(cfg config.Config) (*sealbox.Box, error) {
	if cfg.SecretKey != "" {
		return sealbox.FromPassphrase(cfg.SecretKey), nil
	}
	return sealbox.LoadOrCreateKeyFile(filepath.Join(cfg.Local.DataDir, "secret.key"))
}

// defaultSpecs is the built-in sandbox spec: the acs binary's agent server
// with a workspace per sandbox.
func defaultSpecs(bin, dataDir string) []acs.SandboxSpec {
	return []acs.SandboxSpec{{ID: "acs-local", Command: []string{bin, "agent-server"}, CreatedAt: time.Unix(0, 0).UTC(),
		InitialEnv: map[string]string{}, WorkingDir: filepath.Join(dataDir, "sandboxes", "{sandbox_id}", "workspace")}}
}

// ensureAdmin makes sure the admin user exists and bootstraps the local
// user's API key: ACS_API_KEY, else the key kept in <data dir>/api_key, else
// a new one generated now and saved there (mode 0600). It returns the key and
// whether it was generated now.
//
// The key is registered once per value (see accounts.EnsureAdmin): a key the
// admin revoked through the API stays revoked after a restart (a warning is
// logged), and a changed ACS_API_KEY (or a regenerated api_key) is
// registered while the previously bootstrapped key is revoked.
func ensureAdmin(ctx context.Context, store accounts.AdminStore, cfg config.Local) (string, bool, error) {
	keyFile := filepath.Join(cfg.DataDir, "api_key")
	key, generated := cfg.APIKey, false
	if key == "" {
		if b, err := os.ReadFile(keyFile); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			key = strings.TrimSpace(string(b))
		} else {
			key, generated = "acs_"+acs.NewSecret(40), true
			if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
				return "", false, fmt.Errorf("save generated API key: %w", err)
			}
		}
	}
	hash := acs.HashKey(key)
	if err := accounts.EnsureAdmin(ctx, store, hash, key[:min(accounts.KeyPrefixLen, len(key))]); err != nil {
		return "", false, err
	}
	if _, err := store.GetAPIKeyByHash(ctx, hash); errors.Is(err, acs.ErrNotFound) {
		slog.Warn("acs serve: the admin API key (ACS_API_KEY or <data dir>/api_key) was revoked; set ACS_API_KEY to a new value to use a new one",
			"data_dir", cfg.DataDir)
	} else if err != nil {
		return "", false, fmt.Errorf("read the admin API key: %w", err)
	}
	return key, generated, nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
