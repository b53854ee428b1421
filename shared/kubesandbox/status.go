package kubesandbox

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/acs-project/acs/shared/acs"
)

// Waiting reasons that end a sandbox: Kubernetes keeps retrying them, but
// they do not fix themselves (a wrong image, a broken spec). A crashing
// agent server (CrashLoopBackOff) ends it only as a crash loop (crashLoop).
var fatalWaiting = map[string]bool{
	"ImagePullBackOff":           true,
	"InvalidImageName":           true,
	"ErrImageNeverPull":          true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
}

// crashLoop is how many crashes of a container make a crash loop, as in
// procsandbox (3 within 5 minutes): a container waiting in CrashLoopBackOff
// has crashed restartCount+1 times, and the kubelet only backs off crashes
// that come close together (its back-off resets after 10 minutes of
// running), which stands in for the window.
const crashLoop = 3

// PodStatus maps an agent-server Pod to a sandbox status and a detail for
// the user. RUNNING only when the pod is Ready (its readiness probe on
// /ready passes); a pod being deleted, pending scheduling, pulling its image
// or starting is STARTING, and so is a container Kubernetes restarts after
// a crash; a crash loop (the container backing off its third crash), an
// image that cannot be pulled, a broken container spec, an eviction or a
// pod that ended is ERROR.
func PodStatus(pod *corev1.Pod) (acs.SandboxStatus, string) {
	if pod == nil {
		return acs.SandboxMissing, ""
	}
	if pod.DeletionTimestamp != nil {
		return acs.SandboxStarting, "the previous pod is terminating"
	}
	switch pod.Status.Phase {
	case corev1.PodFailed:
		if pod.Status.Reason == "Evicted" {
			return acs.SandboxError, "the pod was evicted: " + pod.Status.Message
		}
		return acs.SandboxError, "the pod failed" + reasonSuffix(pod.Status.Reason, pod.Status.Message)
	case corev1.PodSucceeded:
		return acs.SandboxError, "the agent server exited"
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && fatalWaiting[w.Reason] {
			return acs.SandboxError, fmt.Sprintf("container %s: %s", cs.Name, strings.TrimSpace(w.Reason+": "+w.Message))
		}
		if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
			crashes := cs.RestartCount + 1
			if crashes >= crashLoop {
				return acs.SandboxError, fmt.Sprintf("crash loop: container %s exited %d times%s; %s",
					cs.Name, crashes, lastExit(cs), strings.TrimSpace(w.Reason+": "+w.Message))
			}
			return acs.SandboxStarting, fmt.Sprintf("container %s restarting after a crash%s (%s, crash %d; %d make the sandbox ERROR)",
				cs.Name, lastExit(cs), w.Reason, crashes, crashLoop)
		}
	}
	if pod.Status.Phase == corev1.PodRunning && condition(pod, corev1.PodReady) == corev1.ConditionTrue {
		return acs.SandboxRunning, ""
	}
	if c := findCondition(pod, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse {
		return acs.SandboxStarting, "waiting for a node" + reasonSuffix(c.Reason, c.Message)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return acs.SandboxStarting, fmt.Sprintf("container %s: %s", cs.Name, w.Reason)
		}
		if cs.State.Terminated != nil {
			return acs.SandboxStarting, fmt.Sprintf("container %s restarting after exit code %d", cs.Name, cs.State.Terminated.ExitCode)
		}
	}
	if pod.Status.Phase == corev1.PodRunning {
		return acs.SandboxStarting, "waiting for the agent server to be ready"
	}
	return acs.SandboxStarting, ""
}

// lastExit describes a container's last termination (" (last: OOMKilled,
// exit code 137)"), or "".
func lastExit(cs corev1.ContainerStatus) string {
	t := cs.LastTerminationState.Terminated
	if t == nil {
		return ""
	}
	if t.Reason != "" {
		return fmt.Sprintf(" (last: %s, exit code %d)", t.Reason, t.ExitCode)
	}
	return fmt.Sprintf(" (last: exit code %d)", t.ExitCode)
}

func reasonSuffix(reason, msg string) string {
	s := strings.TrimSpace(strings.TrimSpace(reason) + ": " + strings.TrimSpace(msg))
	s = strings.Trim(s, ": ")
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func findCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func condition(pod *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	if c := findCondition(pod, t); c != nil {
		return c.Status
	}
	return corev1.ConditionUnknown
}
