// Package benchtable turns the output of `go test -bench` runs into the
// summary table `make bench` prints last (issue 17): for each headline
// figure, this run's median over the -count runs, its goal, whether the goal
// is met, and its ratio to a floor of this machine measured in the same run
// (internal/floor), so that a figure is comparable across machines.
//
// The figures are data (Floors, Rows): a row names a package, a benchmark
// name prefix and a metric unit, and shows one line per benchmark that
// matches, so a new sub-benchmark shows up without a code change.
package benchtable

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Sample is one metric of one benchmark result line.
type Sample struct {
	Pkg   string // import path, from the "pkg:" line before the result
	Name  string // full benchmark name without the -GOMAXPROCS suffix
	Unit  string // e.g. "ns/op", "ms/ready"
	Value float64
}

// procs is the -GOMAXPROCS suffix go test appends to benchmark names.
var procs = regexp.MustCompile(`-\d+$`)

// Parse reads `go test -bench` output and returns every metric of every
// result line, in order. Lines that are not results are skipped. A result
// whose name and figures are split by output the benchmark printed in
// between (the name on one line, the iteration count and metrics on a later
// one) is joined. It fails only when r does.
func Parse(r io.Reader) ([]Sample, error) {
	var out []Sample
	pkg, pending := "", ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg, pending = strings.TrimSpace(p), ""
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		name := ""
		switch {
		case strings.HasPrefix(f[0], "Benchmark"):
			name, f = f[0], f[1:]
			pending = ""
		case pending != "" && (strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")):
			name = pending
		default:
			continue
		}
		ss, ok := metrics(pkg, procs.ReplaceAllString(name, ""), f)
		if !ok {
			if strings.HasPrefix(line, "Benchmark") {
				pending = name // figures may follow on a later line
			}
			continue
		}
		pending = ""
		out = append(out, ss...)
	}
	return out, sc.Err()
}

// metrics parses "N v1 u1 v2 u2 ..." (the part of a result after its name).
func metrics(pkg, name string, f []string) ([]Sample, bool) {
	if len(f) < 3 || len(f)%2 == 0 {
		return nil, false
	}
	if _, err := strconv.ParseInt(f[0], 10, 64); err != nil {
		return nil, false
	}
	var out []Sample
	for i := 1; i < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return nil, false
		}
		out = append(out, Sample{Pkg: pkg, Name: name, Unit: f[i+1], Value: v})
	}
	return out, true
}

// Median is the median of vs (the mean of the two middle values for an even
// count); NaN for none.
func Median(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// MS is the factor that converts a value in unit to milliseconds: the unit
// starts with ns, µs (or us), ms or s, followed by "/" or "-" ("ns/op",
// "ms/ready", "µs-overhead/step"). ok is false for other units.
func MS(unit string) (factor float64, ok bool) {
	head := unit
	if i := strings.IndexAny(unit, "/-"); i >= 0 {
		head = unit[:i]
	}
	switch head {
	case "ns":
		return 1e-6, true
	case "µs", "μs", "us":
		return 1e-3, true
	case "ms":
		return 1, true
	case "s":
		return 1000, true
	}
	return 0, false
}

// Metric selects benchmarks: those of package Pkg (an import path, or its
// tail after a "/": "sandbox/eventlog") whose name is Bench or starts with
// Bench followed by "/", and their metric Unit, a time unit (see MS).
type Metric struct {
	Pkg, Bench, Unit string
}

func (m Metric) matches(s Sample) bool {
	return s.Unit == m.Unit && (s.Pkg == m.Pkg || strings.HasSuffix(s.Pkg, "/"+m.Pkg)) &&
		(s.Name == m.Bench || strings.HasPrefix(s.Name, m.Bench+"/"))
}

// Floor is one physical floor of the machine.
type Floor struct {
	ID     string // what rows name in Row.Floor
	Figure string
	Metric
	// RefMS is this floor on the machine the goals were set for (issue
	// 17: spawn about 3 ms, fsync about 0.1 ms): a goal divided by it is
	// the goal as a multiple of the floor, which holds on any machine.
	RefMS float64
}

// Row is one headline figure and its goal.
type Row struct {
	Figure string
	Metric
	GoalMS float64 // met when the median is at most this; 0: no goal (shown for where the time goes)
	Floor  string  // the Floor.ID the figure is divided by
}

// Floors are the floors `make bench` measures (internal/floor).
var Floors = []Floor{
	{"spawn", "process spawn → first 200", Metric{"internal/floor", "BenchmarkSpawnToFirst200", "ns/op"}, 3},
	{"fsync", "fsync of 1 KiB", Metric{"internal/floor", "BenchmarkFsync1KiB", "ns/op"}, 0.1},
}

// Rows are the headline figures of issue 17 and their goals. Add a row for
// a new figure; a new sub-benchmark under an existing prefix shows up as a
// line of its own.
var Rows = []Row{
	{"start → READY, new local sandbox", Metric{"cmd/acs", "BenchmarkStartToReady/new-sandbox", "ms/ready"}, 25, "spawn"},
	{"start → READY, reused sandbox", Metric{"cmd/acs", "BenchmarkStartToReady/reused-sandbox", "ms/ready"}, 10, "spawn"},
	// The same starts through stream-start: READY as it is stored, no
	// polling granularity or poll round trips.
	{"start → READY, new local sandbox, stream-start", Metric{"cmd/acs", "BenchmarkStartToReady/new-sandbox-stream", "ms/ready"}, 25, "spawn"},
	{"start → READY, reused sandbox, stream-start", Metric{"cmd/acs", "BenchmarkStartToReady/reused-sandbox-stream", "ms/ready"}, 10, "spawn"},
	// No goal: the cost without the warm pool, and with a clone.
	{"start → READY, new local sandbox, no warm pool", Metric{"cmd/acs", "BenchmarkStartToReady/new-sandbox-cold", "ms/ready"}, 0, "spawn"},
	{"start → READY, new sandbox with a repository clone", Metric{"cmd/acs", "BenchmarkStartToReady/with-clone", "ms/ready"}, 0, "spawn"},
	{"reopen a 100k-event log to the first search", Metric{"sandbox/eventlog", "BenchmarkReopenFirstSearch100k", "ns/op"}, 200, "fsync"},
	{"event appended → delivered", Metric{"sandbox/webhook", "BenchmarkDeliveryLatency", "ms/delivery"}, 3, "fsync"},
	{"agent-loop overhead per step", Metric{"sandbox/agent", "BenchmarkLoopOverheadPerStep", "µs-overhead/step"}, 0.5, "fsync"},
	{"body= search at 100k events (control plane)", Metric{"shared/boltstore", "BenchmarkSearchEventsBody/events=100000", "ns/op"}, 2, "fsync"},
	{"body= search at 100k events (agent server)", Metric{"sandbox/eventlog", "BenchmarkSearchBody/events=100000", "ns/op"}, 2, "fsync"},
}

// Line is one line of the table: a floor (GoalMS 0, Floor "") or a
// benchmark a row matched. A row that matched nothing gives one line with
// Runs 0 and Bench the row's prefix.
type Line struct {
	Figure, Pkg, Bench, Unit string
	Runs                     int
	MedianMS                 float64 // NaN without runs
	GoalMS                   float64
	Floor                    string  // the floor's ID
	FloorMS                  float64 // NaN when the floor was not measured
	FloorRefMS               float64 // the floor's RefMS (0: none)
}

// GoalRatio is the goal as a multiple of the floor on the machine the goal
// was set for (NaN without a goal or a reference floor).
func (l Line) GoalRatio() float64 {
	if l.GoalMS <= 0 || l.FloorRefMS <= 0 {
		return math.NaN()
	}
	return l.GoalMS / l.FloorRefMS
}

// MetScaled reports whether the figure meets its goal scaled to this
// machine: its ratio to the floor measured in the same run is at most the
// goal's ratio to the reference floor.
func (l Line) MetScaled() bool { return l.Runs > 0 && l.Ratio() <= l.GoalRatio() }

// Met reports whether the line has runs and its median meets its goal.
func (l Line) Met() bool { return l.Runs > 0 && l.MedianMS <= l.GoalMS }

// Ratio is the median in multiples of the floor (NaN when either is
// missing).
func (l Line) Ratio() float64 { return l.MedianMS / l.FloorMS }

// group collects the values of the samples m matches, by benchmark name in
// order of first appearance.
func group(samples []Sample, m Metric) (names []string, values map[string][]float64) {
	values = map[string][]float64{}
	for _, s := range samples {
		if !m.matches(s) {
			continue
		}
		if _, seen := values[s.Name]; !seen {
			names = append(names, s.Name)
		}
		values[s.Name] = append(values[s.Name], s.Value)
	}
	return names, values
}

// Lines computes the table: the floors first, then each row's lines. A
// floor that matches several benchmarks uses the first.
func Lines(samples []Sample, floors []Floor, rows []Row) []Line {
	var out []Line
	floorMS, refMS := map[string]float64{}, map[string]float64{}
	for _, f := range floors {
		refMS[f.ID] = f.RefMS
		factor, _ := MS(f.Unit)
		l := Line{Figure: "floor: " + f.Figure, Pkg: f.Pkg, Bench: f.Bench, Unit: f.Unit, MedianMS: math.NaN(), FloorMS: math.NaN()}
		if names, values := group(samples, f.Metric); len(names) > 0 {
			l.Bench, l.Runs, l.MedianMS = names[0], len(values[names[0]]), Median(values[names[0]])*factor
		}
		floorMS[f.ID] = l.MedianMS
		out = append(out, l)
	}
	for _, r := range rows {
		factor, _ := MS(r.Unit)
		fl, ok := floorMS[r.Floor]
		if !ok {
			fl = math.NaN()
		}
		names, values := group(samples, r.Metric)
		if len(names) == 0 {
			out = append(out, Line{Figure: r.Figure, Pkg: r.Pkg, Bench: r.Bench, Unit: r.Unit, MedianMS: math.NaN(), GoalMS: r.GoalMS, Floor: r.Floor, FloorMS: fl, FloorRefMS: refMS[r.Floor]})
		}
		for _, n := range names {
			out = append(out, Line{Figure: r.Figure, Pkg: r.Pkg, Bench: n, Unit: r.Unit, Runs: len(values[n]),
				MedianMS: Median(values[n]) * factor, GoalMS: r.GoalMS, Floor: r.Floor, FloorMS: fl, FloorRefMS: refMS[r.Floor]})
		}
	}
	return out
}

// FormatMS formats milliseconds with three significant digits or so.
func FormatMS(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "—"
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// Markdown writes lines as a markdown table.
func Markdown(w io.Writer, lines []Line) error {
	var b strings.Builder
	b.WriteString("| figure | benchmark (metric) | runs | median | goal | met | floor | × floor | goal × floor | met at this machine's floor |\n")
	b.WriteString("|---|---|---:|---:|---:|---|---|---:|---:|---|\n")
	for _, l := range lines {
		median, goal, met, floor, ratio := "not run", "—", "—", "—", "—"
		goalRatio, metScaled := "—", "—"
		if r := l.GoalRatio(); !math.IsNaN(r) {
			goalRatio = "≤ " + FormatMS(r) + "×"
			if l.Runs > 0 && !math.IsNaN(l.Ratio()) {
				metScaled = map[bool]string{true: "yes", false: "**no**"}[l.MetScaled()]
			}
		}
		if l.Runs > 0 {
			median = FormatMS(l.MedianMS) + " ms"
		}
		if l.Floor != "" {
			floor = l.Floor + " (" + FormatMS(l.FloorMS) + " ms)"
			if l.GoalMS > 0 { // a figure shown for where the time goes has none
				goal = "≤ " + strconv.FormatFloat(l.GoalMS, 'f', -1, 64) + " ms"
			}
			if l.Runs > 0 {
				if l.GoalMS > 0 {
					met = map[bool]string{true: "yes", false: "**no**"}[l.Met()]
				}
				if r := l.Ratio(); !math.IsNaN(r) {
					ratio = FormatMS(r) + "×"
				}
			}
		}
		fmt.Fprintf(&b, "| %s | %s `%s` (%s) | %d | %s | %s | %s | %s | %s | %s | %s |\n",
			l.Figure, l.Pkg, l.Bench, l.Unit, l.Runs, median, goal, met, floor, ratio, goalRatio, metScaled)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
