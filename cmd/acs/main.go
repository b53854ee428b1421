// Command acs is the Agent Conversation Service's local binary:
//
//	acs serve          the control plane (V1 API) on the embedded store, with process sandboxes
//	acs agent-server   the agent server that runs inside a sandbox
//	acs llmtest        a scripted OpenAI-compatible LLM for trying ACS without a model
//	acs runtime-api    process sandboxes behind the runtime API (a stand-in for Kubernetes)
//	acs version        print the version
//
// and the user command line (login, start, watch, send, ls, ...: package
// client/cli).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/acs-project/acs/client/cli"
	"github.com/acs-project/acs/internal/httpserve"
	"github.com/acs-project/acs/sandbox/agentserver"
	"github.com/acs-project/acs/sandbox/initproc"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/sandbox/procenv"
	"github.com/acs-project/acs/sandbox/secrets"
	"github.com/acs-project/acs/sandbox/telemetry"
	"github.com/acs-project/acs/shared/config"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	setupLogging()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cli.Has(os.Args[1]) {
		code := cli.Main(ctx, os.Args[1:], cli.Std())
		stop()
		os.Exit(code)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(ctx, os.Args[2:])
	case "agent-server":
		err = agentServer(ctx, os.Args[2:])
	case "llmtest":
		err = llmTest(ctx, os.Args[2:])
	case "runtime-api":
		err = runtimeAPI(ctx, os.Args[2:])
	case "version", "--version", "-v":
		fmt.Println(agentserver.Version)
	case "help", "-h", "--help":
		usage()
	default:
		fmt.Fprintf(os.Stderr, "acs: unknown command %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err != nil {
		slog.Error("acs: fatal", "error", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `Usage: acs <command> [flags]

Commands:
  serve          run the control plane (V1 API) locally: embedded store, process sandboxes
  agent-server   run the agent server (inside a sandbox)
  llmtest        serve a scripted OpenAI-compatible LLM from a JSON file
  runtime-api    serve process sandboxes over the runtime API (ACS_RUNTIME_API_KEY)
  version        print the version

Use ACS from the command line (after "acs login"):
`+cli.Commands()+`
Run "acs <command> -h" for a command's flags.
`)
}

// setupLogging logs text to stderr, or JSON with LOG_JSON=true; LOG_LEVEL sets
// the level (debug, info, warn, error). Every command logs this way, so it
// is read (config.Logging) before the command's own configuration.
func setupLogging() {
	l := config.Logging(os.Getenv)
	opts := &slog.HandlerOptions{Level: l.Level}
	var h slog.Handler = slog.NewTextHandler(os.Stderr, opts)
	if l.JSON {
		h = slog.NewJSONHandler(os.Stderr, opts)
	}
	slog.SetDefault(slog.New(h))
}

// listen opens addr and, when addrFile is set, writes the bound address to it
// (atomically) so a parent process can find a random port.
func listen(addr, addrFile string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	if addrFile != "" {
		if err := writeFileAtomic(addrFile, ln.Addr().String()); err != nil {
			ln.Close()
			return nil, fmt.Errorf("write address file: %w", err)
		}
	}
	return ln, nil
}

// writeFileAtomic writes content to path through a temporary file, so a
// reader sees the whole content or no file.
func writeFileAtomic(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// serveHTTP serves h on ln with the hardened server (internal/httpserve:
// bounded header and body reads, a connection cap, JSON error bodies) until
// ctx ends, then shuts down gracefully.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler, lim httpserve.Limits) error {
	srv := httpserve.New(h, lim)
	lim = srv.Limits()
	slog.Info("http limits", "max_connections", lim.MaxConnections, "max_connections_per_ip", lim.MaxConnectionsPerIP,
		"read_timeout", lim.ReadTimeout, "busy_header_timeout", lim.BusyHeaderTimeout, "min_body_rate", lim.MinBodyRate,
		"write_timeout", lim.WriteTimeout, "idle_timeout", lim.IdleTimeout, "max_header_bytes", lim.MaxHeaderBytes)
	return srv.Serve(ctx, ln)
}

func agentServer(ctx context.Context, args []string) error {
	// As a container's first process (the image's entrypoint), acs is
	// also its init: PID 1 seals itself, runs the server as its child,
	// reaps orphans and forwards signals (sandbox/initproc).
	if initproc.Needed() {
		code, err := initproc.Run(os.Args)
		if err != nil {
			return err
		}
		os.Exit(code)
	}
	fs := flag.NewFlagSet("agent-server", flag.ExitOnError)
	addr := fs.String("addr", envOr("ACS_AGENT_ADDR", "127.0.0.1:8000"), "listen address (ACS_AGENT_ADDR)")
	port := fs.Int("port", 0, "listen on 0.0.0.0:PORT instead of -addr (OpenHands-compatible flag)")
	addrFile := fs.String("addr-file", "", "write the bound address to this file once listening")
	pidFile := fs.String("pid-file", "", "write the agent server's process id to this file before listening")
	initBudget := fs.Duration("init", 0, "run as the sandbox's init: start the agent server as a child and stop every process it starts within this time once it exits or is told to stop (sandbox/initproc)")
	parentFD := fs.Int("init-parent-fd", -1, "with --init: a pipe from the parent process; its end means the parent died and the sandbox stops")
	fs.Parse(args)
	if *initBudget > 0 {
		// The server's command line is this one without the --init flags.
		argv := []string{os.Args[0], "agent-server"}
		fs.Visit(func(f *flag.Flag) {
			if !strings.HasPrefix(f.Name, "init") {
				argv = append(argv, "--"+f.Name+"="+f.Value.String())
			}
		})
		code, err := initproc.Supervise(append(argv, fs.Args()...), *initBudget, *parentFD)
		if err != nil {
			return err
		}
		os.Exit(code)
	}
	if *port != 0 {
		*addr = fmt.Sprintf("0.0.0.0:%d", *port)
	}
	cfg, err := agentserver.ConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	lim, err := httpserve.LimitsFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	// Every log line passes through the server's secret masker.
	cfg.Masker = secrets.NewMasker()
	slog.SetDefault(slog.New(cfg.Masker.Handler(slog.Default().Handler())))
	tp, shutdown, err := telemetry.Setup(ctx, os.Getenv, "acs-agent-server")
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := shutdown(sctx); err != nil {
			slog.Warn("telemetry: flush at exit", "error", err)
		}
	}()
	cfg.TracerProvider = tp
	// The configuration is read: the server's own credentials leave the
	// environment every tool inherits, and are masked wherever they appear.
	cfg.Masker.Add(procenv.Secrets(os.Environ())...)
	if err := procenv.Seal(); err != nil {
		slog.Warn("agent server: could not fully seal its credentials from the processes it starts", "error", err)
	}
	srv, err := agentserver.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer srv.Close()
	if cfg.Prewarm {
		srv.Prewarm(ctx)
	}
	if *pidFile != "" {
		if err := writeFileAtomic(*pidFile, strconv.Itoa(os.Getpid())); err != nil {
			return fmt.Errorf("write pid file: %w", err)
		}
	}
	ln, err := listen(*addr, *addrFile)
	if err != nil {
		return err
	}
	slog.Info("agent server listening", "addr", ln.Addr().String(), "auth", len(cfg.SessionKeys) > 0, "webhooks", len(cfg.WebhookURLs))
	return serveHTTP(ctx, ln, srv.Handler(), lim)
}

func llmTest(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("llmtest", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:4000", "listen address")
	script := fs.String("script", "", "JSON file holding an array of scripted replies (required)")
	fs.Parse(args)
	if *script == "" {
		return errors.New("llmtest: -script is required")
	}
	data, err := os.ReadFile(*script)
	if err != nil {
		return err
	}
	replies, err := llmtest.LoadScript(data)
	if err != nil {
		return err
	}
	s, err := llmtest.Listen(*addr, replies...)
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Printf("llmtest: serving %d scripted replies at %s (set LLM_BASE_URL to this)\n", len(replies), s.URL)
	<-ctx.Done()
	return nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
