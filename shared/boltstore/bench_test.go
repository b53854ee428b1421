package boltstore

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/acs-project/acs/shared/acs"
)

const benchPerUser = 10_000

var (
	benchOnce  sync.Once
	benchStore *Store
	benchDir   string
	benchErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchStore != nil {
		benchStore.Close()
	}
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// benchConversation is a realistic record: every 10th title mentions
// "parser", every 20th conversation is a sub-conversation.
func benchConversation(owner string, i int) acs.Conversation {
	words := []string{"Fix flaky test", "Add endpoint", "Refactor module", "Update docs", "Bump deps",
		"Improve logging", "Speed up build", "Review PR", "Triage issue", "Write parser"}
	title := fmt.Sprintf("%s #%d", words[i%len(words)], i)
	repo, branch, provider, model, trigger := "acme/widgets", "main", "github", "model-x", "gui"
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
	c := acs.Conversation{ID: fmt.Sprintf("%s%028d", owner[:4], i), OwnerID: owner, SandboxID: fmt.Sprintf("sb-%s-%d", owner, i%50),
		SelectedRepository: &repo, SelectedBranch: &branch, GitProvider: &provider, Title: &title, Trigger: &trigger,
		LLMModel: &model, Tags: map[string]string{"team": "core"}, WorkingDir: "/workspace/project",
		ProjectDir: "/workspace/project/widgets", ExecutionStatus: "idle", ExecutionStatusAt: created,
		Metrics:     json.RawMessage(`{"accumulated_cost":0.42,"accumulated_token_usage":{"prompt_tokens":1200,"completion_tokens":300}}`),
		StartTaskID: fmt.Sprintf("task%028d", i), CreatedAt: created, UpdatedAt: created.Add(time.Hour)}
	if i%20 == 19 {
		parent := fmt.Sprintf("%s%028d", owner[:4], i-1)
		c.ParentConversationID = &parent
	}
	return c
}

// benchSeed opens one store for all benchmarks: 10k conversations for each
// of two users, written in one transaction.
func benchSeed(b *testing.B) *Store {
	b.Helper()
	benchOnce.Do(func() {
		if benchDir, benchErr = os.MkdirTemp("", "boltstore-bench-"); benchErr != nil {
			return
		}
		if benchStore, benchErr = Open(filepath.Join(benchDir, "acs.db")); benchErr != nil {
			return
		}
		benchErr = benchStore.db.Update(func(tx *bolt.Tx) error {
			for _, owner := range []string{"alice", "bobby"} {
				for i := 0; i < benchPerUser; i++ {
					c := benchConversation(owner, i)
					if err := insertConversation(tx, &c); err != nil {
						return err
					}
				}
			}
			return nil
		})
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchStore
}

func BenchmarkSearchConversations10k(b *testing.B) {
	s := benchSeed(b)
	ctx := context.Background()
	second, err := s.SearchConversations(ctx, "alice", acs.ConversationFilter{}, acs.ListOptions{Limit: 100})
	if err != nil || second.Next == "" {
		b.Fatal(err)
	}
	cases := []struct {
		name string
		f    acs.ConversationFilter
		tok  string
		want int
	}{
		{"no_filter", acs.ConversationFilter{IncludeSubConversations: true}, "", 100},
		{"top_level", acs.ConversationFilter{}, "", 100},
		{"second_page", acs.ConversationFilter{}, second.Next, 100},
		{"title_contains", acs.ConversationFilter{TitleContains: "PARSER"}, "", 100},   // 1 in 10 matches
		{"title_contains_rare", acs.ConversationFilter{TitleContains: "#9998"}, "", 1}, // scans every entry
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				page, err := s.SearchConversations(ctx, "alice", tc.f, acs.ListOptions{Limit: 100, PageToken: tc.tok})
				if err != nil || len(page.Items) != tc.want {
					b.Fatalf("%d items, %v", len(page.Items), err)
				}
			}
		})
	}
}

func BenchmarkGetConversation10k(b *testing.B) {
	s := benchSeed(b)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		id := fmt.Sprintf("alic%028d", i%benchPerUser)
		if _, err := s.GetConversation(ctx, id); err != nil {
			b.Fatal(err)
		}
		i += 7919
	}
}

func BenchmarkCountConversations10k(b *testing.B) {
	s := benchSeed(b)
	ctx := context.Background()
	cases := []struct {
		name string
		f    acs.ConversationFilter
		want int
	}{
		{"no_filter", acs.ConversationFilter{IncludeSubConversations: true}, benchPerUser},
		{"top_level", acs.ConversationFilter{}, benchPerUser - benchPerUser/20},
		{"title_contains", acs.ConversationFilter{TitleContains: "parser", IncludeSubConversations: true}, benchPerUser / 10},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				n, err := s.CountConversations(ctx, "alice", tc.f)
				if err != nil || n != tc.want {
					b.Fatalf("count %d, want %d, %v", n, tc.want, err)
				}
			}
		})
	}
}
