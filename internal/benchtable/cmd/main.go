// Command benchtable prints the `make bench` summary table (see
// internal/benchtable) from the `go test -bench` outputs named on its
// command line: go run ./internal/benchtable/cmd out/*.txt
package main

import (
	"fmt"
	"os"

	"github.com/acs-project/acs/internal/benchtable"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchtable go-test-bench-output...")
		os.Exit(2)
	}
	var samples []benchtable.Sample
	for _, name := range os.Args[1:] {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
			os.Exit(1)
		}
		s, err := benchtable.Parse(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchtable: reading %s: %v\n", name, err)
			os.Exit(1)
		}
		samples = append(samples, s...)
	}
	fmt.Println("Summary: the median of each figure over this run's -count runs, its goal, and the median")
	fmt.Println("as a multiple of a floor of this machine measured in the same run (internal/floor).")
	fmt.Println()
	if err := benchtable.Markdown(os.Stdout, benchtable.Lines(samples, benchtable.Floors, benchtable.Rows)); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}
