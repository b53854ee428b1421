package benchtable_test

import (
	"math"
	"strings"
	"testing"

	"github.com/acs-project/acs/internal/benchtable"
)

// run is `make bench` output of a few packages with -count 3 on two CPUs:
// sub-benchmarks, custom metrics, a result split by the benchmark's own
// output, and lines that are not results.
const run = `== floors
goos: linux
goarch: amd64
pkg: github.com/acs-project/acs/internal/floor
cpu: Some CPU
BenchmarkSpawnToFirst200-2   	     200	   3100000 ns/op
BenchmarkSpawnToFirst200-2   	     200	   2900000 ns/op
BenchmarkSpawnToFirst200-2   	     200	   3000000 ns/op
BenchmarkFsync1KiB-2         	     200	    100000 ns/op
BenchmarkFsync1KiB-2         	     200	    120000 ns/op
BenchmarkFsync1KiB-2         	     200	     90000 ns/op
PASS
ok  	github.com/acs-project/acs/internal/floor	3.1s
goos: linux
goarch: amd64
pkg: github.com/acs-project/acs/cmd/acs
BenchmarkStartToReady/new-sandbox-2         	      20	  74000000 ns/op	        74.00 ms/ready	        30.00 ms/step-boot
BenchmarkStartToReady/new-sandbox-2         	      20	  70000000 ns/op	        70.00 ms/ready	        28.00 ms/step-boot
BenchmarkStartToReady/new-sandbox-2         	      20	  90000000 ns/op	        90.00 ms/ready	        29.00 ms/step-boot
BenchmarkStartToReady/reused-sandbox-2      	time=2026-11-26T15:00:00Z level=INFO msg="sandbox up"
      20	   8000000 ns/op	         8.000 ms/ready
BenchmarkStartToReady/reused-sandbox-2      	      20	   9000000 ns/op	         9.000 ms/ready
BenchmarkStartToReady/with-clone-2          	      20	 120000000 ns/op	       120.0 ms/ready
BenchmarkStartToReady/reused-sandbox-2      	      20	  12000000 ns/op	        12.00 ms/ready
BenchmarkStartToReady/with-clone-2          	      20	 110000000 ns/op	       110.0 ms/ready
PASS
pkg: github.com/acs-project/acs/sandbox/agent
BenchmarkLoopOverheadPerStep/no-secrets-2   	     300	   1000000 ns/op	       410.0 µs-llm/step	       300.0 µs-overhead/step
BenchmarkLoopOverheadPerStep/no-secrets-2   	     300	   1000000 ns/op	       400.0 µs-llm/step	       350.0 µs-overhead/step
BenchmarkLoopOverheadPerStep/with-secrets-2 	     300	   1000000 ns/op	       400.0 µs-llm/step	       700.0 µs-overhead/step
BenchmarkLoopOverheadPerStep/with-secrets-2 	     300	   1000000 ns/op	       400.0 µs-llm/step	       600.0 µs-overhead/step
pkg: github.com/acs-project/acs/shared/boltstore
BenchmarkSearchEventsBody/events=10000/TIMESTAMP-2         	     200	     80000 ns/op	    6232 B/op	     368 allocs/op
BenchmarkSearchEventsBody/events=100000/TIMESTAMP-2        	     200	    200000 ns/op	    4272 B/op	     331 allocs/op
BenchmarkSearchEventsBody/events=100000/TIMESTAMP_DESC-2   	     200	     80000 ns/op	    4288 B/op	     328 allocs/op
BenchmarkSearchEventsBody/events=1000000/TIMESTAMP-2       	     200	   9000000 ns/op	    4272 B/op	     331 allocs/op
--- FAIL: BenchmarkSomethingElse
ok  	github.com/acs-project/acs/shared/boltstore	18.342s
`

func TestParse(t *testing.T) {
	samples, err := benchtable.Parse(strings.NewReader(run))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		pkg, name, unit string
		want            []float64
	}{
		{"github.com/acs-project/acs/internal/floor", "BenchmarkSpawnToFirst200", "ns/op", []float64{3100000, 2900000, 3000000}},
		{"github.com/acs-project/acs/cmd/acs", "BenchmarkStartToReady/new-sandbox", "ms/ready", []float64{74, 70, 90}},
		{"github.com/acs-project/acs/cmd/acs", "BenchmarkStartToReady/new-sandbox", "ms/step-boot", []float64{30, 28, 29}},
		// The first result's figures follow a log line the benchmark printed.
		{"github.com/acs-project/acs/cmd/acs", "BenchmarkStartToReady/reused-sandbox", "ms/ready", []float64{8, 9, 12}},
		{"github.com/acs-project/acs/sandbox/agent", "BenchmarkLoopOverheadPerStep/with-secrets", "µs-overhead/step", []float64{700, 600}},
		{"github.com/acs-project/acs/shared/boltstore", "BenchmarkSearchEventsBody/events=100000/TIMESTAMP", "allocs/op", []float64{331}},
		{"github.com/acs-project/acs/shared/boltstore", "BenchmarkSomethingElse", "ns/op", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name+" "+tc.unit, func(t *testing.T) {
			var got []float64
			for _, s := range samples {
				if s.Pkg == tc.pkg && s.Name == tc.name && s.Unit == tc.unit {
					got = append(got, s.Value)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("values %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("values %v, want %v", got, tc.want)
				}
			}
		})
	}
	if n := len(samples); n != 6+9+6+4+12+12 {
		t.Errorf("%d samples, want %d", n, 6+9+6+4+12+12)
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{[]float64{5}, 5},
		{[]float64{90, 74, 70}, 74},
		{[]float64{8, 12, 9, 30}, 10.5},
		{[]float64{3, 1}, 2},
	}
	for _, tc := range tests {
		if got := benchtable.Median(tc.in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if got := benchtable.Median(nil); !math.IsNaN(got) {
		t.Errorf("Median(nil) = %v, want NaN", got)
	}
	in := []float64{3, 1, 2}
	benchtable.Median(in)
	if in[0] != 3 || in[1] != 1 {
		t.Errorf("Median reordered its input: %v", in)
	}
}

func TestMS(t *testing.T) {
	tests := []struct {
		unit string
		want float64
		ok   bool
	}{
		{"ns/op", 1e-6, true},
		{"µs-overhead/step", 1e-3, true},
		{"us/op", 1e-3, true},
		{"ms/ready", 1, true},
		{"ms", 1, true},
		{"s/op", 1000, true},
		{"B/op", 0, false},
		{"allocs/op", 0, false},
		{"MB-idle", 0, false},
	}
	for _, tc := range tests {
		got, ok := benchtable.MS(tc.unit)
		if got != tc.want || ok != tc.ok {
			t.Errorf("MS(%q) = %v, %v; want %v, %v", tc.unit, got, ok, tc.want, tc.ok)
		}
	}
}

func TestLines(t *testing.T) {
	samples, err := benchtable.Parse(strings.NewReader(run))
	if err != nil {
		t.Fatal(err)
	}
	floors := []benchtable.Floor{
		{ID: "spawn", Figure: "spawn", Metric: benchtable.Metric{Pkg: "internal/floor", Bench: "BenchmarkSpawnToFirst200", Unit: "ns/op"}},
		{ID: "fsync", Figure: "fsync", Metric: benchtable.Metric{Pkg: "internal/floor", Bench: "BenchmarkFsync1KiB", Unit: "ns/op"}},
		{ID: "gone", Figure: "not measured", Metric: benchtable.Metric{Pkg: "internal/floor", Bench: "BenchmarkNone", Unit: "ns/op"}},
	}
	rows := []benchtable.Row{
		{Figure: "new", Metric: benchtable.Metric{Pkg: "cmd/acs", Bench: "BenchmarkStartToReady/new-sandbox", Unit: "ms/ready"}, GoalMS: 25, Floor: "spawn"},
		{Figure: "all starts", Metric: benchtable.Metric{Pkg: "cmd/acs", Bench: "BenchmarkStartToReady", Unit: "ms/ready"}, GoalMS: 100, Floor: "spawn"},
		{Figure: "loop", Metric: benchtable.Metric{Pkg: "sandbox/agent", Bench: "BenchmarkLoopOverheadPerStep", Unit: "µs-overhead/step"}, GoalMS: 0.5, Floor: "fsync"},
		{Figure: "body", Metric: benchtable.Metric{Pkg: "shared/boltstore", Bench: "BenchmarkSearchEventsBody/events=100000", Unit: "ns/op"}, GoalMS: 2, Floor: "fsync"},
		{Figure: "wrong package", Metric: benchtable.Metric{Pkg: "shared/acs", Bench: "BenchmarkStartToReady/new-sandbox", Unit: "ms/ready"}, GoalMS: 25, Floor: "spawn"},
		{Figure: "no floor", Metric: benchtable.Metric{Pkg: "sandbox/agent", Bench: "BenchmarkLoopOverheadPerStep/no-secrets", Unit: "µs-overhead/step"}, GoalMS: 0.5, Floor: "gone"},
	}
	type want struct {
		figure, bench string
		runs          int
		median        float64 // ms; NaN: none
		met           bool
		ratio         float64 // NaN: none
	}
	nan := math.NaN()
	wants := []want{
		{"floor: spawn", "BenchmarkSpawnToFirst200", 3, 3, false, nan},
		{"floor: fsync", "BenchmarkFsync1KiB", 3, 0.1, false, nan},
		{"floor: not measured", "BenchmarkNone", 0, nan, false, nan},
		{"new", "BenchmarkStartToReady/new-sandbox", 3, 74, false, 74.0 / 3},
		// A prefix shows every sub-benchmark, in order of appearance, each
		// with its own median (an even count: the mean of the middle two).
		{"all starts", "BenchmarkStartToReady/new-sandbox", 3, 74, true, 74.0 / 3},
		{"all starts", "BenchmarkStartToReady/reused-sandbox", 3, 9, true, 3},
		{"all starts", "BenchmarkStartToReady/with-clone", 2, 115, false, 115.0 / 3},
		{"loop", "BenchmarkLoopOverheadPerStep/no-secrets", 2, 0.325, true, 3.25},
		{"loop", "BenchmarkLoopOverheadPerStep/with-secrets", 2, 0.65, false, 6.5},
		// events=100000 does not match events=10000 or events=1000000.
		{"body", "BenchmarkSearchEventsBody/events=100000/TIMESTAMP", 1, 0.2, true, 2},
		{"body", "BenchmarkSearchEventsBody/events=100000/TIMESTAMP_DESC", 1, 0.08, true, 0.8},
		{"wrong package", "BenchmarkStartToReady/new-sandbox", 0, nan, false, nan},
		{"no floor", "BenchmarkLoopOverheadPerStep/no-secrets", 2, 0.325, true, nan},
	}
	lines := benchtable.Lines(samples, floors, rows)
	if len(lines) != len(wants) {
		for _, l := range lines {
			t.Logf("%+v", l)
		}
		t.Fatalf("%d lines, want %d", len(lines), len(wants))
	}
	near := func(a, b float64) bool {
		return math.IsNaN(a) && math.IsNaN(b) || math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b))
	}
	for i, w := range wants {
		l := lines[i]
		if l.Figure != w.figure || l.Bench != w.bench || l.Runs != w.runs || !near(l.MedianMS, w.median) ||
			l.Met() != w.met || !near(l.Ratio(), w.ratio) {
			t.Errorf("line %d = %+v (met %v, ratio %v), want %+v", i, l, l.Met(), l.Ratio(), w)
		}
	}
}

func TestMarkdown(t *testing.T) {
	samples, err := benchtable.Parse(strings.NewReader(run))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := benchtable.Markdown(&b, benchtable.Lines(samples, benchtable.Floors, benchtable.Rows)); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"| figure | benchmark (metric) | runs | median | goal | met | floor | × floor | goal × floor | met at this machine's floor |\n",
		"| floor: process spawn → first 200 | internal/floor `BenchmarkSpawnToFirst200` (ns/op) | 3 | 3.00 ms | — | — | — | — | — | — |\n",
		"| start → READY, new local sandbox | cmd/acs `BenchmarkStartToReady/new-sandbox` (ms/ready) | 3 | 74.0 ms | ≤ 25 ms | **no** | spawn (3.00 ms) | 24.7× | ≤ 8.33× | **no** |\n",
		"| start → READY, reused sandbox | cmd/acs `BenchmarkStartToReady/reused-sandbox` (ms/ready) | 3 | 9.00 ms | ≤ 10 ms | yes | spawn (3.00 ms) | 3.00× | ≤ 3.33× | yes |\n",
		"| agent-loop overhead per step | sandbox/agent `BenchmarkLoopOverheadPerStep/with-secrets` (µs-overhead/step) | 2 | 0.65 ms | ≤ 0.5 ms | **no** | fsync (0.1 ms) | 6.50× | ≤ 5.00× | **no** |\n",
		"| event appended → delivered | sandbox/webhook `BenchmarkDeliveryLatency` (ms/delivery) | 0 | not run | ≤ 3 ms | — | fsync (0.1 ms) | — | ≤ 30.0× | — |\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks\n%s\ngot\n%s", want, got)
		}
	}
}

// TestRows checks the figures as declared: time units, known floors, goals
// not negative (0: a figure shown without a goal).
func TestRows(t *testing.T) {
	ids := map[string]bool{}
	for _, f := range benchtable.Floors {
		if _, ok := benchtable.MS(f.Unit); !ok || f.ID == "" || ids[f.ID] {
			t.Errorf("floor %+v: unit not a time, or ID empty or repeated", f)
		}
		ids[f.ID] = true
	}
	for _, r := range benchtable.Rows {
		if _, ok := benchtable.MS(r.Unit); !ok || !ids[r.Floor] || r.GoalMS < 0 || r.Pkg == "" || !strings.HasPrefix(r.Bench, "Benchmark") {
			t.Errorf("row %+v: unit not a time, unknown floor, negative goal, or no package or benchmark", r)
		}
	}
}

// TestMetScaled: on a machine whose floors are slower than those the goals
// were set on, a figure is judged by its ratio to the floor measured in the
// same run against the goal's ratio to the reference floor.
func TestMetScaled(t *testing.T) {
	for _, tc := range []struct {
		name           string
		l              benchtable.Line
		met, metScaled bool
	}{
		{"slow machine, in proportion", benchtable.Line{Runs: 3, MedianMS: 40, GoalMS: 10, FloorMS: 19.3, FloorRefMS: 3}, false, true},
		{"slow machine, out of proportion", benchtable.Line{Runs: 3, MedianMS: 80, GoalMS: 10, FloorMS: 19.3, FloorRefMS: 3}, false, false},
		{"fast machine, over the scaled goal", benchtable.Line{Runs: 3, MedianMS: 9, GoalMS: 10, FloorMS: 1, FloorRefMS: 3}, true, false},
		{"no goal", benchtable.Line{Runs: 3, MedianMS: 9, FloorMS: 1, FloorRefMS: 3}, false, false},
		{"not run", benchtable.Line{MedianMS: math.NaN(), GoalMS: 10, FloorMS: 1, FloorRefMS: 3}, false, false},
	} {
		if got, gotScaled := tc.l.Met(), tc.l.MetScaled(); got != tc.met || gotScaled != tc.metScaled {
			t.Errorf("%s: met %v, met scaled %v; want %v, %v", tc.name, got, gotScaled, tc.met, tc.metScaled)
		}
	}
}
