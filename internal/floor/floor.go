// Package floor holds the physical floors of this machine as benchmarks, so
// that `make bench` can report every headline figure as a multiple of what
// the machine itself cannot go below (see internal/benchtable):
//
//   - BenchmarkSpawnToFirst200: start a small Go HTTP server process
//     (floorserver) and get its first HTTP 200, the floor of any start that
//     boots a process;
//   - BenchmarkFsync1KiB: append 1 KiB to a file and fsync it, the floor of
//     any durable write.
//
// The package has no code of its own beyond this documentation; the
// benchmarks are in its tests and the server in floorserver.
package floor
