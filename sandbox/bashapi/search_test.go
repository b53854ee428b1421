package bashapi_test

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/bashapi"
)

// fixture stores a mix of events: three commands (one with several output
// chunks, one failing) and a BashError. It returns every event in timestamp
// order.
func fixture(t *testing.T, e *env) []event {
	t.Helper()
	e.execute("echo a", nil, 0)
	e.execute("echo b1; sleep 0.3; echo b2; sleep 0.3; echo b3 >&2; exit 2", nil, 0)
	if st, b := e.do("POST", "/api/bash/start_bash_command", `{"command":"x","cwd":"/nope"}`); st != 422 { // an unusable cwd is an invalid field
		t.Fatalf("bad cwd: %d %s", st, b)
	}
	e.execute("echo c", nil, 0)
	all := e.all(url.Values{})
	if len(all) < 9 {
		t.Fatalf("fixture has %d events", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].Timestamp >= all[i].Timestamp {
			t.Fatalf("events not in strictly increasing timestamp order: %s, %s", all[i-1].Timestamp, all[i].Timestamp)
		}
	}
	return all
}

func ids(evs []event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

func filter(evs []event, keep func(event) bool) []string {
	var out []string
	for _, ev := range evs {
		if keep(ev) {
			out = append(out, ev.ID)
		}
	}
	return out
}

func TestSearchFilters(t *testing.T) {
	e := newEnv(t, envOpts{})
	all := fixture(t, e)
	var multi string // the command with several chunks
	for _, ev := range all {
		if ev.Kind == "BashCommand" && strings.HasPrefix(deref(ev.Command), "echo b1") {
			multi = ev.ID
		}
	}
	mid := all[len(all)/2]
	midTime, err := events.ParseTime(mid.Timestamp)
	if err != nil {
		t.Fatal(err)
	}
	// The same instant written with an offset.
	midOffset := midTime.In(time.FixedZone("", 2*3600)).Format("2006-01-02T15:04:05.999999-07:00")
	dashed := multi[:8] + "-" + multi[8:12] + "-" + multi[12:16] + "-" + multi[16:20] + "-" + multi[20:]

	cases := []struct {
		name   string
		params url.Values
		want   []string
	}{
		{"none", url.Values{}, ids(all)},
		{"kind command", url.Values{"kind__eq": {"BashCommand"}}, filter(all, func(ev event) bool { return ev.Kind == "BashCommand" })},
		{"kind output", url.Values{"kind__eq": {"BashOutput"}}, filter(all, func(ev event) bool { return ev.Kind == "BashOutput" })},
		{"kind error", url.Values{"kind__eq": {"BashError"}}, filter(all, func(ev event) bool { return ev.Kind == "BashError" })},
		{"command id", url.Values{"command_id__eq": {multi}}, filter(all, func(ev event) bool { return ev.CommandID == multi })},
		{"command id dashed upper", url.Values{"command_id__eq": {strings.ToUpper(dashed)}}, filter(all, func(ev event) bool { return ev.CommandID == multi })},
		{"unknown command id", url.Values{"command_id__eq": {strings.Repeat("0", 32)}}, nil},
		{"timestamp gte", url.Values{"timestamp__gte": {mid.Timestamp}}, filter(all, func(ev event) bool { return ev.Timestamp >= mid.Timestamp })},
		{"timestamp lt", url.Values{"timestamp__lt": {mid.Timestamp}}, filter(all, func(ev event) bool { return ev.Timestamp < mid.Timestamp })},
		{"timestamp gte with offset", url.Values{"timestamp__gte": {midOffset}}, filter(all, func(ev event) bool { return ev.Timestamp >= mid.Timestamp })},
		{"timestamp window", url.Values{"timestamp__gte": {all[2].Timestamp}, "timestamp__lt": {all[5].Timestamp}}, ids(all[2:5])},
		{"order gt 0", url.Values{"order__gt": {"0"}}, filter(all, func(ev event) bool { return ev.Order == nil || *ev.Order > 0 })},
		{"order gt -1", url.Values{"order__gt": {"-1"}}, ids(all)},
		{"command id and order", url.Values{"command_id__eq": {multi}, "order__gt": {"1"}}, filter(all, func(ev event) bool { return ev.CommandID == multi && *ev.Order > 1 })},
		{"kind and window", url.Values{"kind__eq": {"BashOutput"}, "timestamp__lt": {mid.Timestamp}}, filter(all, func(ev event) bool { return ev.Kind == "BashOutput" && ev.Timestamp < mid.Timestamp })},
		{"desc", url.Values{"sort_order": {"TIMESTAMP_DESC"}}, reversed(ids(all))},
		{"asc explicit", url.Values{"sort_order": {"TIMESTAMP"}}, ids(all)},
		{"limit", url.Values{"limit": {"3"}}, ids(all[:3])},
		{"limit desc", url.Values{"limit": {"2"}, "sort_order": {"TIMESTAMP_DESC"}}, reversed(ids(all))[:2]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			got, _ := e.search(tc.params)
			if !slices.Equal(ids(got), tc.want) {
				t.Fatalf("got %v\nwant %v", ids(got), tc.want)
			}
		})
	}
	e.t = t
	if n := len(filter(all, func(ev event) bool { return ev.CommandID == multi })); n < 3 {
		t.Fatalf("multi-chunk command has %d outputs", n)
	}
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

func TestSearchPaging(t *testing.T) {
	e := newEnv(t, envOpts{})
	all := fixture(t, e)
	outputs := filter(all, func(ev event) bool { return ev.Kind == "BashOutput" })
	for _, limit := range []int{1, 2, 3, 7, 100} {
		for _, desc := range []bool{false, true} {
			for _, kind := range []string{"", "BashOutput"} {
				name := "limit=" + strconv.Itoa(limit)
				want := ids(all)
				params := url.Values{"limit": {strconv.Itoa(limit)}}
				if desc {
					name += "/desc"
					params.Set("sort_order", "TIMESTAMP_DESC")
				}
				if kind != "" {
					name += "/" + kind
					params.Set("kind__eq", kind)
					want = outputs
				}
				if desc {
					want = reversed(want)
				}
				t.Run(name, func(t *testing.T) {
					e.t = t
					var got []string
					p := url.Values{}
					for k, v := range params {
						p[k] = v
					}
					pages := 0
					for {
						evs, next := e.search(p)
						pages++
						if len(evs) > limit || (next != nil && len(evs) != limit) {
							t.Fatalf("page %d has %d items (limit %d, next %v)", pages, len(evs), limit, next)
						}
						got = append(got, ids(evs)...)
						if next == nil {
							break
						}
						if !strings.HasSuffix(*next, ".json") {
							t.Fatalf("next_page_id %q is not a file name", *next)
						}
						p.Set("page_id", *next)
					}
					if !slices.Equal(got, want) {
						t.Fatalf("visited %v\nwant %v", got, want)
					}
					if wantPages := max(1, (len(want)+limit-1)/limit); pages != wantPages {
						t.Fatalf("%d pages, want %d", pages, wantPages)
					}
				})
			}
		}
	}
}

func TestSearchInvalidParams(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.execute("echo x", nil, 0)
	cases := []struct {
		query string
		locs  []string
	}{
		{"kind__eq=Foo", []string{"query.kind__eq"}},
		{"kind__eq=", []string{"query.kind__eq"}},
		{"command_id__eq=xyz", []string{"query.command_id__eq"}},
		{"command_id__eq=" + strings.Repeat("g", 32), []string{"query.command_id__eq"}},
		{"timestamp__gte=yesterday", []string{"query.timestamp__gte"}},
		{"timestamp__lt=2026-13-45T00:00:00Z", []string{"query.timestamp__lt"}},
		{"order__gt=abc", []string{"query.order__gt"}},
		{"order__gt=1.5", []string{"query.order__gt"}},
		{"sort_order=ASC", []string{"query.sort_order"}},
		{"page_id=nope.json", []string{"query.page_id"}},
		{"limit=0", []string{"query.limit"}},
		{"limit=101", []string{"query.limit"}},
		{"limit=-1", []string{"query.limit"}},
		{"limit=ten", []string{"query.limit"}},
		{"kind__eq=Foo&limit=0&sort_order=x&page_id=y", []string{"query.kind__eq", "query.sort_order", "query.page_id", "query.limit"}},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			e.t = t
			st, b := e.do("GET", "/api/bash/bash_events/search?"+tc.query, "")
			if st != 422 {
				t.Fatalf("status %d: %s", st, b)
			}
			if got := locs(t, b); !slices.Equal(got, tc.locs) {
				t.Fatalf("locs %v, want %v (%s)", got, tc.locs, b)
			}
		})
	}
	// Boundaries that are valid.
	for _, q := range []string{"limit=1", "limit=100", "order__gt=-5", "page_id=", "timestamp__gte=2026-01-02"} {
		e.t = t
		if st, b := e.do("GET", "/api/bash/bash_events/search?"+q, ""); st != 200 {
			t.Fatalf("%s: %d %s", q, st, b)
		}
	}
}

func TestGetEvent(t *testing.T) {
	e := newEnv(t, envOpts{})
	final := e.execute("echo x", nil, 0)
	all := e.all(url.Values{})
	for _, ev := range all {
		st, b := e.do("GET", "/api/bash/bash_events/"+ev.ID, "")
		if st != 200 || string(b) != string(ev.raw) {
			t.Fatalf("get %s: %d %s, want %s", ev.ID, st, b, ev.raw)
		}
	}
	id := final.ID
	dashed := id[:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:]
	if st, b := e.do("GET", "/api/bash/bash_events/"+dashed, ""); st != 200 || string(b) != string(final.raw) {
		t.Fatalf("dashed id: %d %s", st, b)
	}
	for _, bad := range []string{strings.Repeat("0", 32), "nope", "search2"} {
		st, b := e.do("GET", "/api/bash/bash_events/"+bad, "")
		var d struct{ Detail string }
		if st != 404 || json.Unmarshal(b, &d) != nil || d.Detail == "" {
			t.Fatalf("get %s: %d %s", bad, st, b)
		}
	}
}

func TestClear(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.execute("echo a", nil, 0)
	e.execute("echo b; exit 1", nil, 0)
	e.do("POST", "/api/bash/execute_bash_command", `{"command":"true","cwd":"/nope"}`)
	running := e.start("echo started; sleep 300", nil, 600)
	testwait.For(t, 10*time.Second, "running output", func() bool {
		outs, _ := e.search(url.Values{"command_id__eq": {running.ID}})
		return len(outs) > 0
	})
	before := e.all(url.Values{})
	keep := filter(before, func(ev event) bool { return ev.ID == running.ID || ev.CommandID == running.ID })
	st, b := e.do("DELETE", "/api/bash/bash_events", "")
	if st != 200 {
		t.Fatalf("delete: %d %s", st, b)
	}
	var res struct {
		ClearedCount *int `json:"cleared_count"`
	}
	if err := json.Unmarshal(b, &res); err != nil || res.ClearedCount == nil || *res.ClearedCount != len(before)-len(keep) {
		t.Fatalf("delete answered %s, want %d cleared", b, len(before)-len(keep))
	}
	if after := e.all(url.Values{}); !slices.Equal(ids(after), keep) {
		t.Fatalf("after clear %v, want %v", ids(after), keep)
	}
	ents, _ := os.ReadDir(e.dir)
	if len(ents) != len(keep) {
		t.Fatalf("%d files left, want %d", len(ents), len(keep))
	}
	// Nothing finished is left to clear.
	if _, b := e.do("DELETE", "/api/bash/bash_events", ""); string(b) != `{"cleared_count":0}` {
		t.Fatalf("second delete: %s", b)
	}
}

func TestRestart(t *testing.T) {
	dir := t.TempDir()
	e1 := newEnv(t, envOpts{dir: dir})
	all := fixture(t, e1)
	if err := e1.svc.Close(); err != nil {
		t.Fatal(err)
	}
	// A command whose server died while it ran, a corrupt file, a stray
	// temporary file and an unrelated file.
	orphan := strings.Repeat("ab", 16)
	orphanJSON := `{"kind":"BashCommand","id":"` + orphan + `","timestamp":"2020-01-02T03:04:05.000006Z","command":"sleep 9","cwd":"/","timeout":300}`
	writes := map[string]string{
		"20200102030405000006_BashCommand_" + orphan + ".json":                      orphanJSON,
		"20200102030405000007_BashError_" + strings.Repeat("cd", 16) + ".json":      `{"kind":"BashError"`,
		".tmp-20200102030405000008_BashError_" + strings.Repeat("ef", 16) + ".json": `{}`,
		"README": "not an event",
	}
	for name, body := range writes {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	e2 := newEnv(t, envOpts{dir: dir})
	got := e2.all(url.Values{})
	// The orphan (oldest) comes first, its synthesized end last.
	if len(got) != len(all)+2 || got[0].ID != orphan {
		t.Fatalf("after restart %d events (first %s), want %d", len(got), got[0].ID, len(all)+2)
	}
	for i, ev := range all {
		if string(got[i+1].raw) != string(ev.raw) {
			t.Fatalf("event %d changed:\n%s\n%s", i, got[i+1].raw, ev.raw)
		}
	}
	end := got[len(got)-1]
	if end.CommandID != orphan || *end.Order != 0 || end.ExitCode == nil || *end.ExitCode != -1 {
		t.Fatalf("orphan end %s", end.raw)
	}
	if _, err := os.Stat(filepath.Join(dir, ".tmp-20200102030405000008_BashError_"+strings.Repeat("ef", 16)+".json")); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
	if st, _ := e2.do("GET", "/api/bash/bash_events/"+all[0].ID, ""); st != 200 {
		t.Fatalf("old event not found: %d", st)
	}
	// New events sort after the old ones.
	final := e2.execute("echo new", nil, 0)
	latest, _ := e2.search(url.Values{"sort_order": {"TIMESTAMP_DESC"}, "limit": {"1"}})
	if latest[0].ID != final.ID {
		t.Fatalf("newest event %s, want %s", latest[0].ID, final.ID)
	}
	// A third start does not synthesize again.
	if err := e2.svc.Close(); err != nil {
		t.Fatal(err)
	}
	svc3, err := bashapi.New(bashapi.Options{Dir: dir, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer svc3.Close()
	items, _, err := svc3.Search(bashapi.SearchQuery{CommandID: orphan})
	if err != nil || len(items) != 1 {
		t.Fatalf("orphan outputs after third start: %d %v", len(items), err)
	}
}
