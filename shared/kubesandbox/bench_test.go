package kubesandbox_test

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/kubesandbox"
)

// BenchmarkCreateToRunning measures a sandbox's Start until Status says
// RUNNING (the pod ready) on the test cluster: claimed from a ready warm
// pod, and created with no pool. Refilling the pool and deleting the
// sandbox are outside the timer. kwok makes scheduling, volume binding
// and image pulls instant, so this is the runtime's API work and the
// cluster's status round trips; on a real cluster a miss adds those.
//
//	scripts/bench.sh (make bench) starts the cluster and runs it.
func BenchmarkCreateToRunning(b *testing.B) {
	rc, ns := cluster(b)
	spec := acs.SandboxSpec{ID: "acs-default", Command: []string{"/usr/local/bin/acs", "agent-server"}}
	run := func(b *testing.B, name string, pool int, want string) {
		k := newKube(b, rc, ns, func(c *kubesandbox.Config) { c.Default.WarmPool = pool })
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			if pool > 0 {
				if _, err := k.rt.Fill(ctx, []acs.SandboxSpec{spec}); err != nil {
					b.Fatal(err)
				}
				testwait.For(b, 60*time.Second, "a ready warm pod", func() bool {
					pods, _ := k.core.Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubesandbox.LabelPool + "=warm"})
					for _, p := range pods.Items {
						if s, _ := kubesandbox.PodStatus(&p); s == acs.SandboxRunning {
							return true
						}
					}
					return false
				})
			}
			id := fmt.Sprintf("bench-%s-%d", name, i)
			b.StartTimer()
			st, err := k.rt.Start(ctx, acs.StartRequest{SandboxID: id, OwnerID: "bench", Spec: spec, SessionKey: acs.NewSecret(40)})
			if err != nil {
				b.Fatal(err)
			}
			// A fine poll: the wait is what the benchmark times.
			if !testwait.UntilEvery(60*time.Second, 2*time.Millisecond, func() bool {
				if st.Status == acs.SandboxRunning {
					return true
				}
				if st, err = k.rt.Status(ctx, id); err != nil {
					b.Fatal(err)
				}
				return false
			}) {
				b.Fatalf("%s never reached RUNNING (last %+v)", id, st)
			}
			b.StopTimer()
			if st.WarmPool != want {
				b.Fatalf("warm pool %q, want %q", st.WarmPool, want)
			}
			if err := k.rt.Delete(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("warm-pool-hit", func(b *testing.B) { run(b, "hit", 1, "hit") })
	// No pool configured: the record says neither hit nor miss.
	b.Run("no-pool", func(b *testing.B) { run(b, "nopool", 0, "") })
}
