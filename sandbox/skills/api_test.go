package skills_test

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/skills"
)

func TestRequestDecoding(t *testing.T) {
	var req skills.Request
	if err := strictjson.Unmarshal([]byte(`{}`), &req, "body"); err != nil {
		t.Fatal(err)
	}
	if !req.LoadPublic || !req.LoadUser || !req.LoadProject || !req.LoadOrg {
		t.Errorf("defaults: %+v", req)
	}
	body := `{"load_public":false,"project_dir":"/w","marketplace_path":null,"registered_marketplaces":[{"name":"m"}],
		"org_configs":null,"org_config":{"repository":"o/r","provider":"github","org_repo_url":"https://x","org_name":"o"},
		"sandbox_config":{"exposed_urls":[{"name":"WORKER_1","url":"http://h:1","port":1}]}}`
	if err := strictjson.Unmarshal([]byte(body), &req, "body"); err != nil {
		t.Fatal(err)
	}
	if req.LoadPublic || *req.ProjectDir != "/w" || req.OrgConfig.OrgName != "o" || req.SandboxConfig.ExposedURLs[0].Port != 1 {
		t.Errorf("decoded: %+v", req)
	}
	err := strictjson.Unmarshal([]byte(`{"load_user":"yes","bogus":1}`), &req, "body")
	es, ok := err.(strictjson.Errors)
	if !ok || len(es) != 2 {
		t.Fatalf("err = %v", err)
	}
}

func TestHandle(t *testing.T) {
	root := t.TempDir()
	dirs := skills.Dirs{
		User:    filepath.Join(root, "user"),
		Org:     filepath.Join(root, "org"),
		Public:  filepath.Join(root, "public"),
		Sandbox: filepath.Join(root, "sandbox"),
	}
	proj := filepath.Join(root, "proj")
	write(t, root, map[string]string{
		"user/skills/git.md":                "---\ntriggers: [git]\n---\nuser git",
		"user/skills/useronly.md":           "user only",
		"org/skills/git.md":                 "---\ntriggers: [git]\n---\norg git",
		"org/skills/orgonly.md":             "org only",
		"public/skills/git/SKILL.md":        "---\ndescription: public git\n---\npublic git",
		"public/skills/docker/SKILL.md":     "---\ndescription: docker\n---\npublic docker",
		"public/skills/broken.md":           "---\ntriggers: nope\n---\nx",
		"sandbox/work_hosts.md":             "sandbox file (same rank as the generated one; loaded later, so it wins)",
		"sandbox/sbx.md":                    "sandbox skill",
		"proj/AGENTS.md":                    "project agents",
		"proj/.openhands/skills/docker.md":  "project docker",
		"proj/.openhands/skills/orgonly.md": "project beats org",
	})
	pd := proj
	tests := []struct {
		name        string
		req         skills.Request
		wantContent map[string]string
		wantSources map[string]int
		wantErrs    int
	}{
		{
			name: "everything",
			req: skills.Request{LoadPublic: true, LoadUser: true, LoadProject: true, LoadOrg: true, ProjectDir: &pd,
				SandboxConfig: &skills.SandboxConfig{ExposedURLs: []skills.ExposedURL{{Name: "WORKER_1", URL: "http://w1", Port: 12000}, {Name: "VSCODE", URL: "http://v", Port: 1}}}},
			wantContent: map[string]string{
				"agents":     "project agents",
				"docker":     "project docker",
				"git":        "org git",
				"orgonly":    "project beats org",
				"sbx":        "sandbox skill",
				"useronly":   "user only",
				"work_hosts": "sandbox file (same rank as the generated one; loaded later, so it wins)",
			},
			wantSources: map[string]int{"sandbox": 3, "public": 2, "user": 2, "org": 2, "project": 3},
			wantErrs:    1,
		},
		{
			name: "flags off",
			req:  skills.Request{ProjectDir: &pd},
			wantContent: map[string]string{
				"sbx":        "sandbox skill",
				"work_hosts": "sandbox file (same rank as the generated one; loaded later, so it wins)",
			},
			wantSources: map[string]int{"sandbox": 2, "public": 0, "user": 0, "org": 0, "project": 0},
		},
		{
			name: "only project and user",
			req:  skills.Request{LoadProject: true, LoadUser: true, ProjectDir: &pd},
			wantContent: map[string]string{
				"agents": "project agents", "docker": "project docker", "git": "user git", "orgonly": "project beats org",
				"useronly": "user only", "sbx": "sandbox skill",
				"work_hosts": "sandbox file (same rank as the generated one; loaded later, so it wins)",
			},
			wantSources: map[string]int{"sandbox": 2, "public": 0, "user": 2, "org": 0, "project": 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := skills.Handle(tt.req, dirs)
			got := map[string]string{}
			for _, s := range resp.Skills {
				got[s.Name] = s.Content
			}
			if !reflect.DeepEqual(got, tt.wantContent) {
				t.Errorf("skills = %v\nwant %v", got, tt.wantContent)
			}
			if !reflect.DeepEqual(resp.Sources, tt.wantSources) {
				t.Errorf("sources = %v, want %v", resp.Sources, tt.wantSources)
			}
			if len(resp.Errors) != tt.wantErrs {
				t.Errorf("errors = %+v", resp.Errors)
			}
		})
	}
}

func TestHandleWorkHostsAndMissingProject(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone")
	resp := skills.Handle(skills.Request{LoadProject: true, ProjectDir: &missing,
		SandboxConfig: &skills.SandboxConfig{ExposedURLs: []skills.ExposedURL{
			{Name: "WORKER_1", URL: "http://a", Port: 12000}, {Name: "WORKER_2", URL: "http://b", Port: 12001}}}}, skills.Dirs{})
	if len(resp.Skills) != 1 {
		t.Fatalf("skills = %+v", resp.Skills)
	}
	wh := resp.Skills[0]
	want := "The user has access to the following hosts for accessing a web application, each of which has a corresponding port:\n* http://a (port 12000)\n* http://b (port 12001)"
	if wh.Name != "work_hosts" || wh.Type != "repo" || wh.Source != "sandbox" || wh.Content != want {
		t.Errorf("work_hosts = %+v", wh)
	}
	if len(resp.Errors) != 1 || resp.Errors[0].File != missing || !strings.Contains(resp.Errors[0].Error, "does not exist") {
		t.Errorf("errors = %+v", resp.Errors)
	}
}

func TestResponseJSON(t *testing.T) {
	resp := skills.Handle(skills.Request{}, skills.Dirs{})
	for name, enc := range map[string]func(any) ([]byte, error){"encoding/json": json.Marshal, "strictjson": strictjson.Marshal} {
		b, err := enc(resp)
		if err != nil {
			t.Fatal(err)
		}
		want := `{"skills":[],"sources":{"org":0,"project":0,"public":0,"sandbox":0,"user":0},"errors":[]}`
		if string(b) != want {
			t.Errorf("%s: %s", name, b)
		}
	}
	b, _ := json.Marshal(skills.Skill{Name: "n", Type: "repo", Content: "c", Triggers: []string{}, Source: "user", Path: "/secret/path"})
	want := `{"name":"n","type":"repo","content":"c","triggers":[],"source":"user","description":"","is_agentskills_format":false,"disable_model_invocation":false}`
	if string(b) != want {
		t.Errorf("skill JSON: %s", b)
	}
}
