package boltstore

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// benchEvents seeds conversation "events-<n>" of the bench store with n
// events as an agent writes them: per ten, a user message, an agent message
// and eight actions, observations (4 KB of output) and state updates.
// Three user messages, at the start, the middle and the end, hold "needle".
func benchEvents(b *testing.B, s *Store, n int) string {
	b.Helper()
	conv := fmt.Sprintf("events-%d", n)
	ctx := context.Background()
	if c, err := s.CountEvents(ctx, conv, acs.EventFilter{}); err != nil || c == n {
		if err != nil {
			b.Fatal(err)
		}
		return conv
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	output := strings.Repeat("ok  \tgithub.com/acme/widgets/parser\t0.012s\n", 4096/42)
	batch := make([]acs.StoredEvent, 0, 1000)
	for i := 0; i < n; i++ {
		e := acs.StoredEvent{ID: fmt.Sprintf("ev-%08d", i), Source: "agent", Timestamp: base.Add(time.Duration(i) * time.Millisecond)}
		switch {
		case i == 0 || i == n/2 || i == n-10:
			e.Kind, e.Source, e.Text = "MessageEvent", "user", fmt.Sprintf("message %d: where is the needle?", i)
		case i%10 == 0:
			e.Kind, e.Source, e.Text = "MessageEvent", "user", fmt.Sprintf("message %d: please run the parser tests again", i)
		case i%10 == 5:
			e.Kind, e.Text = "MessageEvent", fmt.Sprintf("reply %d: the parser tests pass; the tokenizer is fixed", i)
		case i%10 == 1 || i%10 == 6:
			e.Kind = "ActionEvent"
			e.JSON = []byte(fmt.Sprintf(`{"kind":"ActionEvent","id":%q,"tool_name":"terminal","action":{"kind":"TerminalAction","command":"go test ./parser/..."},"thought":[{"type":"text","text":"run the tests"}]}`, e.ID))
		case i%10 == 2 || i%10 == 7:
			e.Kind, e.Source = "ObservationEvent", "environment"
			e.JSON = []byte(fmt.Sprintf(`{"kind":"ObservationEvent","id":%q,"observation":{"kind":"TerminalObservation","content":[{"type":"text","text":%q}]}}`, e.ID, output))
		default:
			e.Kind, e.Source = "ConversationStateUpdateEvent", "environment"
			e.JSON = []byte(fmt.Sprintf(`{"kind":"ConversationStateUpdateEvent","id":%q,"key":"execution_status","value":"running"}`, e.ID))
		}
		if e.JSON == nil {
			e.JSON = []byte(fmt.Sprintf(`{"kind":"MessageEvent","id":%q,"source":%q,"llm_message":{"role":"user","content":[{"type":"text","text":%q}]}}`, e.ID, e.Source, e.Text))
		}
		batch = append(batch, e)
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := s.PutEvents(ctx, conv, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return conv
}

// BenchmarkSearchEventsBody measures the first page of a body search that
// matches three events, on conversations of growing length: the cost per
// request must stay flat as the log grows (issue 11, defect 9).
func BenchmarkSearchEventsBody(b *testing.B) {
	s := benchSeed(b)
	ctx := context.Background()
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			conv := benchEvents(b, s, n)
			for _, desc := range []bool{false, true} {
				b.Run(map[bool]string{false: "TIMESTAMP", true: "TIMESTAMP_DESC"}[desc], func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if _, err := s.SearchEvents(ctx, conv, acs.EventQuery{Limit: 100, Desc: desc, EventFilter: acs.EventFilter{Body: "needle"}}); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
