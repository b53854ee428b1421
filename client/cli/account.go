package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

func init() {
	register(command{"sandboxes", "list, create, pause, resume and delete sandboxes", runSandboxes})
	register(command{"settings", "show or change your settings", runSettings})
	register(command{"keys", "list, create and revoke your API keys", runKeys})
	register(command{"secrets", "list, set and delete your stored secrets", runSecrets})
}

const sandboxesHelp = `Usage: acs sandboxes <subcommand> [--json]

Subcommands:
  ls                  list your sandboxes (status, conversations attached)
  create [--spec id]  start a new sandbox
  pause <id>          pause a sandbox (its workspace is kept)
  resume <id>         resume a paused sandbox
  delete <id>         delete a sandbox and the live state of every conversation in it

Example:
  acs sandboxes ls
  acs sandboxes pause sb-1234
`

func runSandboxes(ctx context.Context, a *app, args []string) error {
	simple := func(name, verb, desc string, do func(context.Context, string) error) func(context.Context, []string) error {
		return func(ctx context.Context, args []string) error {
			fs := a.flags("sandboxes "+name, "sandboxes "+name+" <sandbox-id>", desc, "acs sandboxes "+name+" sb-1234")
			pos, err := a.parse(fs, args, 1, 1)
			if err != nil {
				return err
			}
			if err := a.connect(); err != nil {
				return err
			}
			if err := do(ctx, pos[0]); err != nil {
				return err
			}
			return a.done(map[string]any{"id": pos[0], verb: true}, "%s %s.", strings.ToUpper(verb[:1])+verb[1:], pos[0])
		}
	}
	return a.sub(ctx, "sandboxes", args, map[string]func(context.Context, []string) error{
		"ls": func(ctx context.Context, args []string) error {
			fs := a.flags("sandboxes ls", "sandboxes ls", "Lists your sandboxes.", "acs sandboxes ls")
			if _, err := a.parse(fs, args, 0, 0); err != nil {
				return err
			}
			if err := a.connect(); err != nil {
				return err
			}
			list := []v1wire.Sandbox{}
			f := map[string][]string{"limit": {"100"}}
			for {
				p, err := a.c.SearchSandboxes(ctx, f)
				if err != nil {
					return err
				}
				list = append(list, p.Items...)
				if p.NextPageID == nil {
					break
				}
				f["page_id"] = []string{*p.NextPageID}
			}
			if a.json {
				return a.printJSON(list)
			}
			if len(list) == 0 {
				fmt.Fprintln(a.io.Stdout, "No sandboxes.")
				return nil
			}
			tw := tabwriter.NewWriter(a.io.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATUS\tCONVERSATIONS\tSPEC\tCREATED\tLAST USED")
			for _, s := range list {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", s.ID, s.Status, s.Conversations, s.SandboxSpecID,
					ago(s.CreatedAt.Time), ago(s.LastUsedAt.Time))
			}
			return tw.Flush()
		},
		"create": func(ctx context.Context, args []string) error {
			fs := a.flags("sandboxes create", "sandboxes create [--spec id]", "Starts a new sandbox (STARTING, then RUNNING).", "acs sandboxes create")
			spec := fs.String("spec", "", "the sandbox spec (default: the default spec)")
			if _, err := a.parse(fs, args, 0, 0); err != nil {
				return err
			}
			if err := a.connect(); err != nil {
				return err
			}
			sb, err := a.c.CreateSandbox(ctx, *spec)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(sb)
			}
			fmt.Fprintf(a.io.Stdout, "Created sandbox %s (%s).\n", sb.ID, sb.Status)
			return nil
		},
		"pause":  simple("pause", "paused", "Pauses a sandbox: its processes stop, its workspace is kept.", func(c context.Context, id string) error { return a.c.PauseSandbox(c, id) }),
		"resume": simple("resume", "resumed", "Resumes a paused sandbox.", func(c context.Context, id string) error { return a.c.ResumeSandbox(c, id) }),
		"delete": simple("delete", "deleted",
			"Deletes a sandbox. Every conversation in it loses its live state (its transcript stays readable):\n"+
				"a sandbox shared by several conversations takes them all down.",
			func(c context.Context, id string) error { return a.c.DeleteSandbox(c, id) }),
	}, sandboxesHelp)
}

const settingsHelp = `Usage: acs settings [get | set key=value...] [--json]

  get               show your settings (the default)
  set key=value...  change settings; a value is JSON when it parses as JSON, a string otherwise,
                    null clears it; "key" alone reads the value from stdin (not echoed: for llm_api_key)

Keys: sandbox_grouping_strategy (NO_GROUPING, GROUP_BY_NEWEST, LEAST_RECENTLY_USED,
FEWEST_CONVERSATIONS, ADD_TO_ANY), llm_model, llm_base_url, llm_api_key, confirmation_policy,
max_conversations_per_sandbox, and the other fields of POST /api/v1/settings.

Example:
  acs settings
  acs settings set sandbox_grouping_strategy=LEAST_RECENTLY_USED llm_model=openai/gpt-4o
  acs settings set llm_api_key < key.txt
`

func runSettings(ctx context.Context, a *app, args []string) error {
	get := func(ctx context.Context, args []string) error {
		fs := a.flags("settings get", "settings get", "Shows your settings.", "acs settings get")
		if _, err := a.parse(fs, args, 0, 0); err != nil {
			return err
		}
		if err := a.connect(); err != nil {
			return err
		}
		s, err := a.c.GetSettings(ctx)
		if err != nil {
			return err
		}
		return a.showSettings(s)
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && args[0] != "-h" && args[0] != "--help" {
		return get(ctx, args)
	}
	return a.sub(ctx, "settings", args, map[string]func(context.Context, []string) error{
		"get": get,
		"set": func(ctx context.Context, args []string) error {
			fs := a.flags("settings set", "settings set key=value...", "Changes settings (see \"acs settings --help\").",
				"acs settings set sandbox_grouping_strategy=LEAST_RECENTLY_USED")
			pos, err := a.parse(fs, args, 1, -1)
			if err != nil {
				return err
			}
			body := map[string]json.RawMessage{}
			in := bufio.NewReader(a.io.Stdin)
			for _, kv := range pos {
				k, v, ok := strings.Cut(kv, "=")
				if k == "" {
					return &usageError{cmd: "settings set", msg: fmt.Sprintf("want key=value, got %q", kv)}
				}
				if !ok {
					if v, err = readHidden(a.io, in, k+": "); err != nil {
						return fmt.Errorf("read %s: %w", k, err)
					}
				}
				body[k] = settingValue(v)
			}
			raw, _ := json.Marshal(body)
			var req v1wire.SettingsRequest
			if err := strictjson.Unmarshal(raw, &req); err != nil {
				return &usageError{cmd: "settings set", msg: oneLine(err.Error())}
			}
			if err := a.connect(); err != nil {
				return err
			}
			s, err := a.c.UpdateSettings(ctx, &req)
			if err != nil {
				return err
			}
			return a.showSettings(s)
		},
	}, settingsHelp)
}

// settingValue is v as JSON: itself when it is a JSON number, boolean,
// null, object or array, a JSON string otherwise.
func settingValue(v string) json.RawMessage {
	if t := strings.TrimSpace(v); t != "" && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(v)
	return b
}

func (a *app) showSettings(s v1wire.Settings) error {
	if a.json {
		return a.printJSON(s)
	}
	tw := tabwriter.NewWriter(a.io.Stdout, 0, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("sandbox_grouping_strategy", s.SandboxGroupingStrategy)
	row("max_conversations_per_sandbox", fmt.Sprint(s.MaxConversationsPerSandbox))
	row("llm_model", or(s.LLMModel, "-"))
	row("llm_base_url", or(s.LLMBaseURL, "-"))
	key := "not set"
	if s.LLMAPIKeySet {
		key = "set"
	}
	row("llm_api_key", key)
	policy := "-"
	if len(s.ConfirmationPolicy) > 0 && string(s.ConfirmationPolicy) != "null" {
		policy = string(s.ConfirmationPolicy)
	}
	row("confirmation_policy", policy)
	if s.UpdatedAt != nil {
		row("updated", s.UpdatedAt.Local().Format(time.DateTime))
	}
	return tw.Flush()
}

const keysHelp = `Usage: acs keys <subcommand> [--json]

Subcommands:
  ls             list your API keys (never their values)
  create <name>  make a key; its value is printed this once
  revoke <id>    revoke a key (it stops working at once)

Example:
  acs keys create laptop
  acs keys revoke key-1234
`

func runKeys(ctx context.Context, a *app, args []string) error {
	return a.sub(ctx, "keys", args, map[string]func(context.Context, []string) error{
		"ls": func(ctx context.Context, args []string) error {
			fs := a.flags("keys ls", "keys ls", "Lists your API keys (id, name, prefix, creation).", "acs keys ls")
			if _, err := a.parse(fs, args, 0, 0); err != nil {
				return err
			}
			if err := a.connect(); err != nil {
				return err
			}
			keys, err := a.c.ListKeys(ctx)
			if err != nil {
				return err
			}
			if keys == nil {
				keys = []v1wire.Key{}
			}
			if a.json {
				return a.printJSON(keys)
			}
			tw := tabwriter.NewWriter(a.io.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tPREFIX\tCREATED")
			for _, k := range keys {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Prefix, k.CreatedAt.Local().Format(time.DateTime))
			}
			return tw.Flush()
		},
		"create": func(ctx context.Context, args []string) error {
			fs := a.flags("keys create", "keys create <name>", "Makes an API key. Its value is shown this once: store it now.", "acs keys create laptop")
			pos, err := a.parse(fs, args, 1, 1)
			if err != nil {
				return err
			}
			if err := a.connect(); err != nil {
				return err
			}
			k, err := a.c.CreateKey(ctx, pos[0])
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(k)
			}
			fmt.Fprintf(a.io.Stdout, "Created key %s (%s). Its value, shown this once:\n%s\n", k.ID, k.Name, k.Key)
			return nil
		},
		"revoke": func(ctx context.Context, args []string) error {
			fs := a.flags("keys revoke", "keys revoke <key-id>", "Revokes an API key.", "acs keys revoke key-1234")
			pos, err := a.parse(fs, args, 1, 1)
			if err != nil {
				return err
			}
			if err := a.connect(); err != nil {
				return err
			}
			if err := a.c.DeleteKey(ctx, pos[0]); err != nil {
				return err
			}
			return a.done(map[string]any{"id": pos[0], "revoked": true}, "Revoked %s.", pos[0])
		},
	}, keysHelp)
}

const secretsHelp = `Usage: acs secrets <subcommand> [--json]

Subcommands:
  ls                          list your stored secrets (names, never values)
  set NAME[=VALUE] [--description text]
                              store or replace a secret; without =VALUE the value is read
                              from stdin (not echoed on a terminal)
  delete NAME                 delete a secret

Stored secrets are in every sandbox of yours as environment variables.

Example:
  acs secrets set GITHUB_TOKEN < token.txt
  acs secrets ls
`

func runSecrets(ctx context.Context, a *app, args []string) error {
	return a.sub(ctx, "secrets", args, map[string]func(context.Context, []string) error{
		"ls": func(ctx context.Context, args []string) error {
			fs := a.flags("secrets ls", "secrets ls", "Lists your stored secrets' names (never their values).", "acs secrets ls")
			if _, err := a.parse(fs, args, 0, 0); err != nil {
				return err
			}
			if err := a.connect(); err != nil {
				return err
			}
			list, err := a.c.ListSecrets(ctx)
			if err != nil {
				return err
			}
			if list == nil {
				list = []v1wire.Secret{}
			}
			sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
			if a.json {
				return a.printJSON(list)
			}
			tw := tabwriter.NewWriter(a.io.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tDESCRIPTION\tUPDATED")
			for _, s := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, or(s.Description, "-"), ago(s.UpdatedAt.Time))
			}
			return tw.Flush()
		},
		"set": func(ctx context.Context, args []string) error {
			fs := a.flags("secrets set", "secrets set NAME[=VALUE] [--description text]",
				"Stores a secret, or replaces its value. Without =VALUE, the value is read from stdin (a terminal does\n"+
					"not echo it). Values are never printed.",
				"acs secrets set NPM_TOKEN    # asks for the value\necho -n \"$TOKEN\" | acs secrets set GITHUB_TOKEN")
			desc := fs.String("description", "", "what the secret is for")
			pos, err := a.parse(fs, args, 1, 1)
			if err != nil {
				return err
			}
			name, value, ok := strings.Cut(pos[0], "=")
			if name == "" {
				return &usageError{cmd: "secrets set", msg: "the secret needs a name"}
			}
			if !ok {
				if value, err = readHidden(a.io, bufio.NewReader(a.io.Stdin), "Value of "+name+": "); err != nil {
					return fmt.Errorf("read the value: %w", err)
				}
			}
			if value == "" {
				return &usageError{cmd: "secrets set", msg: "the value is empty"}
			}
			if err := a.connect(); err != nil {
				return err
			}
			var d *string
			if *desc != "" {
				d = desc
			}
			s, err := a.c.CreateSecret(ctx, &v1wire.CreateSecretRequest{Name: name, Value: value, Description: d})
			verb := "Stored"
			if errors.Is(err, acs.ErrConflict) {
				verb = "Replaced"
				s, err = a.c.UpdateSecret(ctx, name, &v1wire.UpdateSecretRequest{Value: &value, Description: d})
			}
			if err != nil {
				return err
			}
			return a.done(s, "%s secret %s.", verb, s.Name)
		},
		"delete": func(ctx context.Context, args []string) error {
			fs := a.flags("secrets delete", "secrets delete NAME", "Deletes a stored secret.", "acs secrets delete NPM_TOKEN")
			pos, err := a.parse(fs, args, 1, 1)
			if err != nil {
				return err
			}
			if err := a.connect(); err != nil {
				return err
			}
			if err := a.c.DeleteSecret(ctx, pos[0]); err != nil {
				return err
			}
			return a.done(map[string]any{"name": pos[0], "deleted": true}, "Deleted secret %s.", pos[0])
		},
	}, secretsHelp)
}
