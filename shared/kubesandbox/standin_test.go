package kubesandbox_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/acs-project/acs/shared/kubesandbox"
)

// standin plays the part of the kubelet's container runtime and of the
// ingress for the pods kwok runs: for every Running agent-server pod of
// the namespace it starts a real `acs agent-server` process with the pod's
// environment (its env and its Secret), its workspace and state in a
// directory per PVC (so they outlive the pod, like the volume), and routes
// http://127.0.0.1:P/rt/{runtime_id}/... to it. A pod that goes away stops
// its process. kwok still decides the pod's phase and readiness.
type standin struct {
	t    testing.TB
	core corev1client.CoreV1Interface
	ns   string
	bin  string
	dir  string
	url  string

	mu    sync.Mutex
	procs map[string]*standinProc // by runtime id
}

type standinProc struct {
	cmd  *exec.Cmd
	port int
	pvc  string
	done chan struct{}
}

func newStandin(t testing.TB, core corev1client.CoreV1Interface, ns, bin string) *standin {
	s := &standin{t: t, core: core, ns: ns, bin: bin, dir: t.TempDir(), procs: map[string]*standinProc{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(s.route)}
	go srv.Serve(ln)
	s.url = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.loop(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		srv.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		for rid, p := range s.procs {
			s.stop(rid, p)
		}
	})
	return s
}

// URLFor is the runtime's Config.URLFor.
func (s *standin) URLFor(rid string) string { return s.url + "/rt/" + rid }

func (s *standin) route(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/rt/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	rid, path, _ := strings.Cut(rest, "/")
	s.mu.Lock()
	p := s.procs[rid]
	s.mu.Unlock()
	if p == nil {
		http.Error(w, "no pod serves "+rid, http.StatusBadGateway)
		return
	}
	target, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", p.port))
	r.URL.Path = "/" + path
	httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
}

// workspace is the directory standing in for a runtime's PVC subPath.
func (s *standin) workspace(rid string) string {
	return filepath.Join(s.dir, "acs-"+rid, "workspace")
}

func (s *standin) loop(ctx context.Context) {
	for ctx.Err() == nil {
		s.provision(ctx)
		pods, err := s.core.Pods(s.ns).List(ctx, metav1.ListOptions{LabelSelector: kubesandbox.LabelComponent + "=agent-server"})
		if err == nil {
			live := map[string]bool{}
			for _, p := range pods.Items {
				rid := p.Labels[kubesandbox.LabelRuntimeID]
				if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
					continue
				}
				live[rid] = true
				s.mu.Lock()
				_, running := s.procs[rid]
				s.mu.Unlock()
				if !running {
					s.start(ctx, &p)
				}
			}
			s.mu.Lock()
			for rid, p := range s.procs {
				if !live[rid] {
					s.stop(rid, p)
				}
			}
			s.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *standin) start(ctx context.Context, pod *corev1.Pod) {
	rid := pod.Labels[kubesandbox.LabelRuntimeID]
	c := pod.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	for _, from := range c.EnvFrom {
		if from.SecretRef == nil {
			continue
		}
		sec, err := s.core.Secrets(s.ns).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
		if err != nil {
			return // not there yet: the next round
		}
		for k, v := range sec.Data {
			env[k] = string(v)
		}
	}
	pvc := pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName
	root := filepath.Join(s.dir, pvc)
	for _, d := range []string{"workspace", "state", "home"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	env["ACS_AGENT_ADDR"] = fmt.Sprintf("127.0.0.1:%d", port)
	env["ACS_WORKSPACE_DIR"] = filepath.Join(root, "workspace")
	env["OH_CONVERSATIONS_PATH"] = filepath.Join(root, "state", "conversations")
	env["OH_BASH_EVENTS_DIR"] = filepath.Join(root, "state", "bash_events")
	env["HOME"] = filepath.Join(root, "home")
	cmd := exec.Command(s.bin, "agent-server")
	cmd.Dir = env["ACS_WORKSPACE_DIR"]
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if err := cmd.Start(); err != nil {
		s.t.Logf("standin: start %s: %v", rid, err)
		return
	}
	p := &standinProc{cmd: cmd, port: port, pvc: pvc, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	s.mu.Lock()
	s.procs[rid] = p
	s.mu.Unlock()
}

func (s *standin) stop(rid string, p *standinProc) {
	p.cmd.Process.Kill()
	<-p.done
	delete(s.procs, rid)
}

// standinClass is the StorageClass whose claims the stand-in provisions.
const standinClass = "acs-standin"

// provision plays a dynamic volume provisioner: every pending claim of the
// stand-in class gets a hostPath PersistentVolume bound to it (the
// controller manager completes the binding).
func (s *standin) provision(ctx context.Context) {
	pvcs, err := s.core.PersistentVolumeClaims(s.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, c := range pvcs.Items {
		if c.Status.Phase != corev1.ClaimPending || c.Spec.StorageClassName == nil || *c.Spec.StorageClassName != standinClass || c.Spec.VolumeName != "" {
			continue
		}
		s.core.PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pv-" + s.ns + "-" + c.Name},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      c.Spec.Resources.Requests,
				AccessModes:                   c.Spec.AccessModes,
				StorageClassName:              standinClass,
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				ClaimRef:                      &corev1.ObjectReference{Namespace: c.Namespace, Name: c.Name, UID: c.UID},
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: filepath.Join(s.dir, c.Name)}},
			},
		}, metav1.CreateOptions{})
	}
}

// agentUp reports whether the runtime's agent server answers /alive.
func (s *standin) agentUp(rid string) bool {
	res, err := http.Get(s.URLFor(rid) + "/alive")
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == 200
}
