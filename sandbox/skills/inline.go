package skills

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ParseInline decodes a skill given inline in agent_context.skills, in the
// reference's shape: {"name", "content", "trigger": null |
// {"type": "keyword", "keywords": [...]} | {"type": "task", "triggers": [...]},
// "description"?, "source"?}. A plain "triggers" list is also accepted.
// Other reference fields (inputs, mcp_tools, ...) are ignored. The skill's
// Source is "inline"; its type is "knowledge" when it has triggers, else
// "repo". Errors name the field.
func ParseInline(raw json.RawMessage) (Skill, error) {
	var in struct {
		Name        string          `json:"name"`
		Content     string          `json:"content"`
		Description *string         `json:"description"`
		Trigger     json.RawMessage `json:"trigger"`
		Triggers    []string        `json:"triggers"`
		Type        string          `json:"type"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return Skill{}, fmt.Errorf("not a skill object: %w", err)
	}
	if strings.TrimSpace(in.Name) == "" {
		return Skill{}, errors.New("name: Field required")
	}
	if strings.TrimSpace(in.Content) == "" {
		return Skill{}, errors.New("content: Field required")
	}
	sk := Skill{Name: in.Name, Content: strings.TrimSpace(in.Content), Source: SourceInline, Triggers: []string{}}
	if in.Description != nil {
		sk.Description = *in.Description
	}
	sk.Triggers = append(sk.Triggers, in.Triggers...)
	if len(in.Trigger) > 0 && string(in.Trigger) != "null" {
		var t struct {
			Type     string   `json:"type"`
			Keywords []string `json:"keywords"`
			Triggers []string `json:"triggers"`
		}
		if err := json.Unmarshal(in.Trigger, &t); err != nil {
			return Skill{}, fmt.Errorf("trigger: %w", err)
		}
		switch t.Type {
		case "keyword", "task", "":
		default:
			return Skill{}, fmt.Errorf("trigger.type: %q is not supported (keyword or task)", t.Type)
		}
		sk.Triggers = append(append(sk.Triggers, t.Keywords...), t.Triggers...)
	}
	for i, tr := range sk.Triggers {
		if strings.TrimSpace(tr) == "" {
			return Skill{}, fmt.Errorf("triggers[%d]: empty trigger", i)
		}
	}
	sk.Type = TypeRepo
	if len(sk.Triggers) > 0 {
		sk.Type = TypeKnowledge
	}
	return sk, nil
}
