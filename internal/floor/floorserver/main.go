// Command floorserver is the smallest Go HTTP server: it listens on a
// loopback port, writes its address as one line to stdout, and answers 200
// "ok" to every request until killed. internal/floor times spawning it up
// to its first 200 (the process-start floor of `make bench`).
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
)

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "floorserver: listen:", err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	err = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok"))
	}))
	fmt.Fprintln(os.Stderr, "floorserver: serve:", err)
	os.Exit(1)
}
