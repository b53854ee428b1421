package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/acs-project/acs/client"
)

// config is what acs login saves.
type config struct {
	URL    string `json:"url"`
	APIKey string `json:"api_key"`
}

// configPath is config.json in IO.ConfigDir, or in os.UserConfigDir()/acs.
func configPath(st IO) (string, error) {
	dir := st.ConfigDir
	if dir == "" {
		base, err := os.UserConfigDir()
		if err != nil {
			return "", fmt.Errorf("find the config directory: %w", err)
		}
		dir = filepath.Join(base, "acs")
	}
	return filepath.Join(dir, "config.json"), nil
}

// loadConfig reads the saved login (empty when there is none).
func loadConfig(st IO) (config, error) {
	var cfg config
	p, err := configPath(st)
	if err != nil {
		return cfg, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, fmt.Errorf("read %s: %w", p, err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return cfg, fmt.Errorf("read %s: %w", p, err)
	}
	return cfg, nil
}

// saveConfig writes the login readable by the user only (0600, in a 0700
// directory), atomically.
func saveConfig(st IO, cfg config) (string, error) {
	p, err := configPath(st)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", fmt.Errorf("save the login: %w", err)
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	tmp, err := os.CreateTemp(filepath.Dir(p), ".config-*.json")
	if err != nil {
		return "", fmt.Errorf("save the login: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", fmt.Errorf("save the login: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return "", fmt.Errorf("save the login: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("save the login: %w", err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return "", fmt.Errorf("save the login: %w", err)
	}
	return p, nil
}

func init() {
	register(command{"login", "sign in: save the server's URL and your API key", runLogin})
	register(command{"logout", "forget the saved login", runLogout})
}

func runLogin(ctx context.Context, a *app, args []string) error {
	fs := a.flags("login", "login [--url URL] [--api-key KEY]",
		"Saves the server's URL and your API key (checked against the server) in the user's config\n"+
			"directory, readable by you only. On a terminal, what the flags do not give is asked for\n"+
			"(the key is not echoed); otherwise --url is needed and the key is read from stdin's first\n"+
			"line, so it never appears in the process list. ACS_URL and ACS_API_KEY, when set,\n"+
			"override the saved values in every command.",
		"acs login    # asks for both\nprintf '%s\\n' \"$KEY\" | acs login --url http://127.0.0.1:3000")
	url := fs.String("url", "", "the control plane's URL (such as http://127.0.0.1:3000)")
	key := fs.String("api-key", "", "your API key")
	if _, err := a.parse(fs, args, 0, 0); err != nil {
		return err
	}
	in := bufio.NewReader(a.io.Stdin)
	if *url == "" {
		if !a.io.StdinTTY {
			return &usageError{cmd: "login", msg: "--url is required when stdin is not a terminal"}
		}
		def := a.io.Getenv("ACS_URL")
		if def == "" {
			def = "http://127.0.0.1:3000"
		}
		fmt.Fprintf(a.io.Stderr, "Server URL [%s]: ", def)
		line, err := in.ReadString('\n')
		if err != nil && line == "" {
			return fmt.Errorf("read the URL: %w", err)
		}
		if *url = strings.TrimSpace(line); *url == "" {
			*url = def
		}
	}
	if *key == "" && !a.io.StdinTTY {
		// A key piped in never shows in the process list, as argv does.
		line, err := in.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read the API key from stdin: %w", err)
		}
		if *key = strings.TrimSpace(line); *key == "" {
			return &usageError{cmd: "login", msg: "the API key is required: pipe it to stdin (or pass --api-key) when stdin is not a terminal"}
		}
	}
	if *key == "" {
		v, err := readHidden(a.io, in, "API key: ")
		if err != nil {
			return fmt.Errorf("read the API key: %w", err)
		}
		*key = v
	}
	*url = strings.TrimRight(strings.TrimSpace(*url), "/")
	if !strings.HasPrefix(*url, "http://") && !strings.HasPrefix(*url, "https://") {
		return &usageError{cmd: "login", msg: fmt.Sprintf("--url %q must start with http:// or https://", *url)}
	}
	c := client.New(*url, strings.TrimSpace(*key), a.httpOpts()...)
	me, err := c.Me(ctx)
	if err != nil {
		return fmt.Errorf("check the key against %s: %w", *url, err)
	}
	p, err := saveConfig(a.io, config{URL: *url, APIKey: strings.TrimSpace(*key)})
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(map[string]any{"url": *url, "user": me, "config": p})
	}
	fmt.Fprintf(a.io.Stdout, "Logged in to %s as %s (%s). Saved in %s.\n", *url, me.Name, me.ID, p)
	return nil
}

func runLogout(_ context.Context, a *app, args []string) error {
	fl := a.flags("logout", "logout", "Forgets the saved URL and API key (the key stays valid: revoke it with \"acs keys revoke\").", "acs logout")
	if _, err := a.parse(fl, args, 0, 0); err != nil {
		return err
	}
	p, err := configPath(a.io)
	if err != nil {
		return err
	}
	err = os.Remove(p)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("log out: %w", err)
	}
	if a.json {
		return a.printJSON(map[string]any{"logged_out": err == nil})
	}
	if err != nil {
		fmt.Fprintln(a.io.Stdout, "Not logged in.")
		return nil
	}
	fmt.Fprintf(a.io.Stdout, "Logged out (removed %s).\n", p)
	return nil
}

// readHidden writes prompt (on a terminal) and reads one line; on a
// terminal, with echo turned off (stty) before the prompt is shown, so a
// key or secret typed is never displayed.
func readHidden(st IO, in *bufio.Reader, prompt string) (string, error) {
	if st.StdinTTY {
		if f, ok := st.Stdin.(*os.File); ok {
			off := exec.Command("stty", "-echo")
			off.Stdin = f
			if off.Run() == nil {
				defer func() {
					on := exec.Command("stty", "echo")
					on.Stdin = f
					_ = on.Run()
					fmt.Fprintln(st.Stderr)
				}()
			}
		}
		fmt.Fprint(st.Stderr, prompt)
	}
	line, err := in.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}
