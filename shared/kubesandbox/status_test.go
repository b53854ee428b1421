package kubesandbox_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/kubesandbox"
)

func TestPodStatus(t *testing.T) {
	now := metav1.Now()
	ready := []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	notReady := []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	waiting := func(reason string) []corev1.ContainerStatus {
		return []corev1.ContainerStatus{{Name: "agent-server", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "details"}}}}
	}
	backingOff := func(restarts int32) []corev1.ContainerStatus {
		return []corev1.ContainerStatus{{Name: "agent-server", RestartCount: restarts,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}}}
	}
	cases := []struct {
		name   string
		pod    *corev1.Pod
		want   acs.SandboxStatus
		detail string
	}{
		{"no pod", nil, acs.SandboxMissing, ""},
		{"just created", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}, acs.SandboxStarting, ""},
		{"unschedulable", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes have enough memory"}}}},
			acs.SandboxStarting, "waiting for a node (Unschedulable: 0/3 nodes have enough memory)"},
		{"pulling", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: notReady, ContainerStatuses: waiting("ContainerCreating")}},
			acs.SandboxStarting, "ContainerCreating"},
		{"first pull error is retried", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: waiting("ErrImagePull")}},
			acs.SandboxStarting, "ErrImagePull"},
		{"image pull back-off", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: waiting("ImagePullBackOff")}},
			acs.SandboxError, "ImagePullBackOff"},
		{"bad config", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: waiting("CreateContainerConfigError")}},
			acs.SandboxError, "CreateContainerConfigError"},
		{"running, not ready", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: notReady,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "agent-server", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}},
			acs.SandboxStarting, "ready"},
		{"ready", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready}}, acs.SandboxRunning, ""},
		// A crash is restarted (STARTING); the third in a row, the
		// kubelet backing it off, is a crash loop (ERROR).
		{"backing off a first crash", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: notReady, ContainerStatuses: backingOff(0)}},
			acs.SandboxStarting, "restarting after a crash (last: OOMKilled, exit code 137) (CrashLoopBackOff, crash 1;"},
		{"backing off a second crash", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: notReady, ContainerStatuses: backingOff(1)}},
			acs.SandboxStarting, "crash 2;"},
		{"crash loop", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: notReady, ContainerStatuses: backingOff(2)}},
			acs.SandboxError, "crash loop: container agent-server exited 3 times (last: OOMKilled, exit code 137); CrashLoopBackOff"},
		{"long crash loop", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: notReady, ContainerStatuses: backingOff(7)}},
			acs.SandboxError, "exited 8 times"},
		{"restarting after an exit", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: notReady,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "agent-server", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2}}}}}},
			acs.SandboxStarting, "exit code 2"},
		{"evicted", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory."}},
			acs.SandboxError, "evicted: The node was low on resource: memory."},
		{"failed", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "DeadlineExceeded"}}, acs.SandboxError, "DeadlineExceeded"},
		{"exited", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, acs.SandboxError, "exited"},
		{"terminating", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready}},
			acs.SandboxStarting, "terminating"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, detail := kubesandbox.PodStatus(c.pod)
			if got != c.want || !strings.Contains(detail, c.detail) {
				t.Fatalf("PodStatus = %s %q, want %s containing %q", got, detail, c.want, c.detail)
			}
		})
	}
}

func TestParseTemplates(t *testing.T) {
	cases := []struct {
		name, raw, err string
	}{
		{"empty", "", ""},
		{"ok", `{"acs-default":{"image":"r/acs:1","warm_pool":2,"workspace_size":"5Gi","resources":{"limits":{"cpu":"2"}},"extra_ports":[{"name":"vscode","port":8001}]}}`, ""},
		{"unknown field", `{"a":{"image":"x","imagee":"y"}}`, "unknown field"},
		{"no image", `{"a":{"warm_pool":1}}`, "image is required"},
		{"negative pool", `{"a":{"image":"x","warm_pool":-1}}`, "warm_pool"},
		{"bad port name", `{"a":{"image":"x","extra_ports":[{"name":"Bad_Name","port":9000}]}}`, "extra port name"},
		{"agent port", `{"a":{"image":"x","extra_ports":[{"name":"dup","port":8000}]}}`, "not a usable port"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := kubesandbox.ParseTemplates(c.raw)
			if (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("ParseTemplates: %v, want %q", err, c.err)
			}
		})
	}
}
