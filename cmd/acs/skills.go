package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/acs-project/acs/sandbox/skills"
	"github.com/acs-project/acs/shared/v1wire"
)

// localSkills lists the skills `acs serve`'s process sandboxes load from
// this machine's user (ACS_SKILLS_DIR, default ~/.openhands/skills),
// organisation (ACS_ORG_SKILLS_DIR) and public (ACS_PUBLIC_SKILLS_DIR)
// directories, as the web frontend's skills page shows them. Files that
// do not load are left out (a conversation reports them).
func localSkills(context.Context) ([]v1wire.SkillInfo, error) {
	user := os.Getenv("ACS_SKILLS_DIR")
	if user == "" {
		if home, err := os.UserHomeDir(); err == nil {
			user = filepath.Join(home, ".openhands", "skills")
		}
	}
	var sets [][]skills.Skill
	for _, d := range []struct{ dir, source string }{{os.Getenv("ACS_PUBLIC_SKILLS_DIR"), "public"}, {user, "user"}, {os.Getenv("ACS_ORG_SKILLS_DIR"), "org"}} {
		list, _ := skills.LoadDir(d.dir, d.source)
		sets = append(sets, list)
	}
	out := []v1wire.SkillInfo{}
	for _, s := range skills.Merge(sets...) {
		triggers := s.Triggers
		if triggers == nil {
			triggers = []string{}
		}
		out = append(out, v1wire.SkillInfo{Name: s.Name, Type: s.Type, Source: s.Source, Triggers: triggers})
	}
	return out, nil
}
