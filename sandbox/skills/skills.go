// Package skills loads OpenHands-compatible skills (formerly "microagents")
// from Markdown files and renders them for the agent's prompts.
//
// A skill is one of three types:
//
//   - "repo": always on; its content goes into the system prompt (see
//     SystemPrompt). Third-party instruction files (AGENTS.md, CLAUDE.md,
//     GEMINI.md, agent.md, .cursorrules) and Markdown skills without
//     triggers are repo skills.
//   - "knowledge": activated when one of its triggers appears in a user
//     message (see Match); its content is then added to that message (see
//     ExtraInfo).
//   - "agentskills": a directory <name>/SKILL.md in the AgentSkills format.
//     It is listed by name, description and location in the system prompt so
//     the model can read it on demand; if it declares triggers it is also
//     activated by keyword like a knowledge skill.
//
// Loading never panics and never stops at a bad file: every file that cannot
// be loaded is reported as a Problem naming the file, and the other files
// still load. A directory that does not exist yields no skills and no
// problems.
//
// Precedence: skills come from sources ranked, lowest to highest, sandbox <
// public < user < org < plugin < project < inline; Merge keeps, for each name, the
// skill of the highest-ranked source.
package skills

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Skill types.
const (
	TypeRepo        = "repo"
	TypeKnowledge   = "knowledge"
	TypeAgentSkills = "agentskills"
)

// Sources, lowest precedence first.
const (
	SourceSandbox = "sandbox"
	SourcePublic  = "public"
	SourceUser    = "user"
	SourceOrg     = "org"
	SourcePlugin  = "plugin" // a plugin attached to the conversation
	SourceProject = "project"
	SourceInline  = "inline"
)

// MaxFileSize is the largest skill file loaded (256 KiB). Larger files are
// reported as a Problem.
const MaxFileSize = 256 << 10

// Skill is one loaded skill.
type Skill struct {
	// Name identifies the skill; Merge replaces skills by name.
	Name string `json:"name"`
	// Type is "repo" (always on), "knowledge" (keyword triggers) or
	// "agentskills" (SKILL.md directory format).
	Type string `json:"type"`
	// Content is the Markdown body, without front matter and trimmed of
	// surrounding white space. It is never empty for a loaded skill.
	Content string `json:"content"`
	// Triggers are the keywords that activate the skill (see Match). Loaded
	// skills always have a non-nil slice.
	Triggers []string `json:"triggers"`
	// Source is where the skill came from: "project", "user", "org",
	// "public", "sandbox" or "inline".
	Source string `json:"source"`
	// Path is the absolute path of the file the skill was loaded from, or ""
	// for generated skills.
	Path string `json:"-"`
	// Description is the front-matter description ("" when absent).
	Description string `json:"description"`
	// IsAgentSkillsFormat is true for <name>/SKILL.md skills.
	IsAgentSkillsFormat bool `json:"is_agentskills_format"`
	// DisableModelInvocation is the front-matter flag
	// disable-model-invocation (or disable_model_invocation): the skill is
	// not advertised to the model in the system prompt.
	DisableModelInvocation bool `json:"disable_model_invocation"`
}

// Problem is a file that could not be loaded.
type Problem struct {
	// File is the path of the file (or directory) concerned.
	File string `json:"file"`
	// Error says what is wrong, in a sentence meant for a user.
	Error string `json:"error"`
}

// thirdParty maps lower-cased third-party instruction file names to the repo
// skill name they load as. Order matters when two names map to one skill:
// the first one found wins.
var thirdParty = []struct{ file, name string }{
	{"agents.md", "agents"},
	{"agent.md", "agents"},
	{"claude.md", "claude"},
	{"gemini.md", "gemini"},
	{".cursorrules", "cursorrules"},
}

func thirdPartyName(base string) (string, bool) {
	lb := strings.ToLower(base)
	for _, tp := range thirdParty {
		if tp.file == lb {
			return tp.name, true
		}
	}
	return "", false
}

// loader accumulates the skills of one LoadDir call. The first skill loaded
// under a name wins; later ones with the same name are skipped.
type loader struct {
	source   string
	skills   []Skill
	problems []Problem
	seen     map[string]bool
	files    map[string]bool // files already loaded (a dir can be scanned twice)
}

// LoadDir loads the skills of one directory tree for a source.
//
// For source "project", dir is the project directory; it and, if different,
// the git root containing it (the nearest ancestor with a .git entry) are
// scanned, the project directory first. In each of those roots it loads, in
// this order of precedence:
//
//   - .agents/skills/*.md and .agents/skills/<name>/SKILL.md
//   - .openhands/skills/*.md and .openhands/skills/<name>/SKILL.md
//   - .openhands/microagents/*.md (legacy) and .openhands/microagents/<name>/SKILL.md
//   - the third-party files AGENTS.md, agent.md, CLAUDE.md, GEMINI.md and
//     .cursorrules in the root itself (names compared case-insensitively), as
//     always-on repo skills named "agents", "claude", "gemini" and
//     "cursorrules"; their whole text is the content (no front matter).
//
// For any other source dir is scanned as dir/skills, dir/microagents and dir
// itself, each for *.md files and <name>/SKILL.md directories.
//
// README.md files are skipped and scanning is not recursive beyond
// <name>/SKILL.md. Within one call, the first skill loaded under a name wins
// (in the order above, then by file name). Every returned skill has Source
// set to source and Path set to the absolute file path. Skills are returned
// in load order; problems name the offending file: unreadable files, files
// over MaxFileSize, non-UTF-8 text, malformed or unclosed front matter,
// front-matter fields of the wrong type, unknown type values and empty
// bodies.
func LoadDir(dir, source string) ([]Skill, []Problem) {
	if dir == "" {
		return nil, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, []Problem{{File: dir, Error: "cannot resolve directory: " + err.Error()}}
	}
	l := &loader{source: source, seen: map[string]bool{}, files: map[string]bool{}}
	if source == SourceProject {
		roots := []string{abs}
		if root := gitRoot(abs); root != "" && root != abs {
			roots = append(roots, root)
		}
		for _, r := range roots {
			l.scanDir(filepath.Join(r, ".agents", "skills"))
			l.scanDir(filepath.Join(r, ".openhands", "skills"))
			l.scanDir(filepath.Join(r, ".openhands", "microagents"))
			l.scanThirdParty(r)
		}
	} else {
		l.scanDir(filepath.Join(abs, "skills"))
		l.scanDir(filepath.Join(abs, "microagents"))
		l.scanDir(abs)
	}
	return l.skills, l.problems
}

// gitRoot returns the nearest ancestor of dir (or dir itself) that holds a
// .git entry, or "".
func gitRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// readDir lists dir sorted by name. A missing directory (or a path that is
// not a directory) is silently empty; other errors are problems.
func (l *loader) readDir(dir string) []os.DirEntry {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || isNotDir(dir) {
			return nil
		}
		l.problems = append(l.problems, Problem{File: dir, Error: "cannot read directory: " + errText(err)})
		return nil
	}
	return entries
}

func isNotDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// scanDir loads dir/*.md and dir/<name>/SKILL.md.
func (l *loader) scanDir(dir string) {
	entries := l.readDir(dir)
	var mdFiles, skillDirs []string
	for _, e := range entries {
		name := e.Name()
		full := filepath.Join(dir, name)
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			st, err := os.Stat(full)
			if err != nil {
				continue // dangling link
			}
			isDir = st.IsDir()
		}
		switch {
		case isDir:
			skillDirs = append(skillDirs, full)
		case strings.EqualFold(filepath.Ext(name), ".md") && !strings.EqualFold(name, "README.md"):
			mdFiles = append(mdFiles, full)
		}
	}
	for _, f := range mdFiles {
		l.loadFile(f, false)
	}
	for _, d := range skillDirs {
		if f := findSkillMD(d); f != "" {
			l.loadFile(f, true)
		}
	}
}

// findSkillMD returns the SKILL.md file (name compared case-insensitively) of
// dir, or "".
func findSkillMD(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		if strings.EqualFold(e.Name(), "SKILL.md") && !e.IsDir() {
			return filepath.Join(dir, e.Name())
		}
	}
	return ""
}

// scanThirdParty loads the third-party instruction files of a project root.
func (l *loader) scanThirdParty(root string) {
	entries := l.readDir(root)
	byLower := map[string]string{}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		lb := strings.ToLower(e.Name())
		if _, ok := thirdPartyName(lb); !ok {
			continue
		}
		if _, dup := byLower[lb]; !dup { // entries are sorted: "AGENTS.md" before "agents.md"
			byLower[lb] = e.Name()
		}
	}
	for _, tp := range thirdParty {
		if n, ok := byLower[tp.file]; ok {
			names = append(names, n)
		}
	}
	for _, n := range names {
		l.loadFile(filepath.Join(root, n), false)
	}
}

func (l *loader) loadFile(path string, agentSkills bool) {
	if l.files[path] {
		return
	}
	l.files[path] = true
	sk, err := loadSkillFile(path, agentSkills)
	if err != nil {
		l.problems = append(l.problems, Problem{File: path, Error: err.Error()})
		return
	}
	if l.seen[sk.Name] {
		return
	}
	l.seen[sk.Name] = true
	sk.Source = l.source
	l.skills = append(l.skills, sk)
}

// loadSkillFile reads and parses one file. It never panics.
func loadSkillFile(path string, agentSkills bool) (sk Skill, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error while parsing: %v", r)
		}
	}()
	data, err := readBounded(path)
	if err != nil {
		return Skill{}, err
	}
	return parseSkill(path, data, agentSkills)
}

// readBounded reads a regular file of at most MaxFileSize bytes.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open file: %s", errText(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot stat file: %s", errText(err))
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if st.Size() > MaxFileSize {
		return nil, fmt.Errorf("file is too large: %d bytes (the limit is %d bytes, 256 KiB)", st.Size(), MaxFileSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read file: %s", errText(err))
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("file is too large: more than %d bytes (256 KiB)", MaxFileSize)
	}
	return data, nil
}

// errText strips the path that *PathError repeats, since problems already
// name the file.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// parseSkill builds a skill from the file's bytes.
func parseSkill(path string, data []byte, agentSkills bool) (Skill, error) {
	if !utf8.Valid(data) {
		return Skill{}, errors.New("file is not valid UTF-8 text")
	}
	text := strings.TrimPrefix(string(data), "\ufeff")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	base := filepath.Base(path)

	if !agentSkills {
		if name, ok := thirdPartyName(base); ok {
			content := strings.TrimSpace(text)
			if content == "" {
				return Skill{}, errors.New("empty body: the file has no content")
			}
			return Skill{Name: name, Type: TypeRepo, Content: content, Triggers: []string{}, Path: path}, nil
		}
	}

	meta, body, err := splitFrontMatter(text)
	if err != nil {
		return Skill{}, err
	}
	fm, err := decodeFrontMatter(meta)
	if err != nil {
		return Skill{}, err
	}
	content := strings.TrimSpace(body)
	if content == "" {
		return Skill{}, errors.New("empty body: the skill has no content after its front matter")
	}

	sk := Skill{
		Content:                content,
		Triggers:               fm.triggers,
		Path:                   path,
		Description:            fm.description,
		DisableModelInvocation: fm.disableModel,
	}
	if sk.Triggers == nil {
		sk.Triggers = []string{}
	}
	switch {
	case fm.name != "":
		sk.Name = fm.name
	case agentSkills:
		sk.Name = filepath.Base(filepath.Dir(path))
	default:
		sk.Name = strings.TrimSuffix(base, filepath.Ext(base))
	}
	switch {
	case agentSkills:
		sk.Type = TypeAgentSkills
		sk.IsAgentSkillsFormat = true
	case fm.typ != "":
		sk.Type = fm.typ
	case len(sk.Triggers) > 0:
		sk.Type = TypeKnowledge
	default:
		sk.Type = TypeRepo
	}
	return sk, nil
}

var fmBoundary = regexp.MustCompile(`^-{3,}[ \t]*$`)

// splitFrontMatter separates "---\n<yaml>\n---\n<body>". Text without a
// leading boundary line has no front matter.
func splitFrontMatter(text string) (meta string, body string, err error) {
	first, rest, found := strings.Cut(text, "\n")
	if !fmBoundary.MatchString(first) {
		return "", text, nil
	}
	if !found {
		return "", "", errors.New("invalid front matter: it starts with --- but is never closed by a --- line")
	}
	var metaLines []string
	for {
		line, after, more := strings.Cut(rest, "\n")
		if fmBoundary.MatchString(line) {
			return strings.Join(metaLines, "\n"), after, nil
		}
		metaLines = append(metaLines, line)
		if !more {
			return "", "", errors.New("invalid front matter: it starts with --- but is never closed by a --- line")
		}
		rest = after
	}
}

type frontMatter struct {
	name, typ, description string
	triggers               []string
	disableModel           bool
}

// decodeFrontMatter interprets the YAML front matter. Unknown keys (and
// version, agent, inputs) are ignored.
func decodeFrontMatter(meta string) (frontMatter, error) {
	var fm frontMatter
	if strings.TrimSpace(meta) == "" {
		return fm, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(meta), &doc); err != nil {
		return fm, fmt.Errorf("invalid YAML front matter: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return fm, nil
	}
	root := resolve(doc.Content[0])
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return fm, nil
	}
	if root.Kind != yaml.MappingNode {
		return fm, errors.New("invalid front matter: it must be a YAML mapping of keys to values")
	}
	seenTrigger := map[string]bool{}
	addTrigger := func(t string) {
		if !seenTrigger[t] {
			seenTrigger[t] = true
			fm.triggers = append(fm.triggers, t)
		}
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key := resolve(root.Content[i])
		val := resolve(root.Content[i+1])
		if key.Kind != yaml.ScalarNode {
			continue
		}
		switch k := key.Value; k {
		case "name":
			s, err := scalarString(k, val)
			if err != nil {
				return fm, err
			}
			fm.name = strings.TrimSpace(s)
		case "type":
			s, err := scalarString(k, val)
			if err != nil {
				return fm, err
			}
			switch t := strings.ToLower(strings.TrimSpace(s)); t {
			case "":
			case TypeRepo, TypeKnowledge:
				fm.typ = t
			case "task": // legacy task microagents are keyword-activated
				fm.typ = TypeKnowledge
			default:
				return fm, fmt.Errorf("invalid front matter: type must be %q or %q, got %q", TypeRepo, TypeKnowledge, s)
			}
		case "description":
			s, err := scalarString(k, val)
			if err != nil {
				return fm, err
			}
			fm.description = strings.TrimSpace(s)
		case "triggers", "keywords", "trigger":
			ts, err := triggerList(k, val, k == "trigger")
			if err != nil {
				return fm, err
			}
			for _, t := range ts {
				addTrigger(t)
			}
		case "disable-model-invocation", "disable_model_invocation":
			if isNull(val) {
				continue
			}
			var b bool
			if val.Kind != yaml.ScalarNode || val.Decode(&b) != nil {
				return fm, fmt.Errorf("invalid front matter: %s must be true or false", k)
			}
			fm.disableModel = b
		}
	}
	return fm, nil
}

func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 16; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// scalarString accepts any scalar (numbers keep their source text); null is "".
func scalarString(key string, n *yaml.Node) (string, error) {
	if isNull(n) {
		return "", nil
	}
	if n.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("invalid front matter: %s must be a string, got %s", key, nodeKind(n))
	}
	return n.Value, nil
}

// triggerList reads a list of trigger strings. A single string is accepted
// only when single is true (the "trigger" key).
func triggerList(key string, n *yaml.Node, single bool) ([]string, error) {
	if isNull(n) {
		return nil, nil
	}
	var items []*yaml.Node
	switch {
	case n.Kind == yaml.SequenceNode:
		items = n.Content
	case n.Kind == yaml.ScalarNode && single:
		items = []*yaml.Node{n}
	default:
		return nil, fmt.Errorf("invalid front matter: %s must be a list of strings, got %s", key, nodeKind(n))
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		it = resolve(it)
		if it.Kind != yaml.ScalarNode || isNull(it) {
			return nil, fmt.Errorf("invalid front matter: %s[%d] must be a string, got %s", key, i, nodeKind(it))
		}
		t := strings.TrimSpace(it.Value)
		if t == "" {
			return nil, fmt.Errorf("invalid front matter: %s[%d] is empty", key, i)
		}
		out = append(out, t)
	}
	return out, nil
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		if isNull(n) {
			return "null"
		}
		return "a single value (" + shortTag(n.Tag) + ")"
	}
	return "an unsupported value"
}

func shortTag(t string) string {
	switch t {
	case "!!str":
		return "string"
	case "!!int":
		return "integer"
	case "!!float":
		return "number"
	case "!!bool":
		return "boolean"
	}
	return strings.TrimPrefix(t, "!!")
}

// sourceRank orders sources for Merge; unknown sources rank below sandbox.
func sourceRank(source string) int {
	switch source {
	case SourceSandbox:
		return 1
	case SourcePublic:
		return 2
	case SourceUser:
		return 3
	case SourceOrg:
		return 4
	case SourcePlugin:
		return 5
	case SourceProject:
		return 6
	case SourceInline:
		return 7
	}
	return 0
}

// Merge combines skill sets by source precedence, lowest to highest:
// sandbox < public < user < org < plugin < project < inline (unknown sources rank
// lowest). For each name the skill whose Source ranks highest is kept; between
// skills of equal rank the later one (in argument order, then slice order)
// wins. The result is sorted by name and shares no slice with the inputs'
// backing arrays (Triggers slices are shared).
func Merge(sets ...[]Skill) []Skill {
	type entry struct {
		sk   Skill
		rank int
	}
	byName := map[string]entry{}
	for _, set := range sets {
		for _, sk := range set {
			r := sourceRank(sk.Source)
			if cur, ok := byName[sk.Name]; ok && cur.rank > r {
				continue
			}
			byName[sk.Name] = entry{sk, r}
		}
	}
	out := make([]Skill, 0, len(byName))
	for _, e := range byName {
		out = append(out, e.sk)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// escapeXML escapes text for the XML-like prompt sections.
func escapeXML(s string) string {
	var b bytes.Buffer
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		case '\'':
			b.WriteString("&apos;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
