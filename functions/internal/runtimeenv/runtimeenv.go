// Package runtimeenv gives the functions that start, inspect or stop
// sandboxes their runtime, as ACS_RUNTIME says: Kubernetes pods through
// the Kubernetes API (shared/kubesandbox), or a sandbox runtime API at
// ACS_RUNTIME_URL (shared/runtimeapi).
package runtimeenv

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/acs-project/acs/functions/internal/awsenv"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/config"
	"github.com/acs-project/acs/shared/kubesandbox"
	"github.com/acs-project/acs/shared/runtimeapi"
)

// Runtime is the sandbox runtime. A configuration the runtime refuses
// (pod templates, credentials) is logged and the process exits, so the
// Lambda init fails with that message.
func Runtime(e *awsenv.Env) acs.Runtime {
	rt, err := New(e)
	if err != nil {
		slog.Error("acs function: invalid runtime configuration", "function", e.Config.AWS.FunctionName, "error", err.Error())
		os.Exit(2)
	}
	return rt
}

// New builds the configured runtime. It does not contact the cluster.
// Errors: unreadable or invalid pod templates, credentials the client
// cannot use.
func New(e *awsenv.Env) (acs.Runtime, error) {
	c := e.Config.AWS
	if c.Runtime == config.RuntimeAPI {
		return runtimeapi.NewClient(c.RuntimeURL, c.RuntimeAPIKey), nil
	}
	k := c.Kube
	templates, err := readTemplates(k.PodTemplates)
	if err != nil {
		return nil, err
	}
	tolerations, err := parseTolerations(k.Tolerations)
	if err != nil {
		return nil, err
	}
	cfg := kubesandbox.Config{Namespace: k.Namespace, BaseHost: k.BaseHost, Separator: k.Separator, Scheme: k.Scheme,
		IngressClassName: k.IngressClass, TLSSecretName: k.TLSSecret, Templates: templates,
		Default:      kubesandbox.PodTemplate{Image: k.Image, WarmPool: k.WarmPool},
		NodeSelector: k.NodeSelector, Tolerations: tolerations,
		// Warm pods are started before any request: they get what every
		// sandbox gets (the webhook URL, the CORS origin).
		Env: e.Flow().Sandboxes.SandboxEnv()}
	if k.Routing == "gateway" {
		cfg.Gateway = &kubesandbox.GatewayRef{Namespace: k.GatewayNamespace, Name: k.GatewayName}
	}
	cred := kubesandbox.Credentials{InCluster: k.InCluster, Kubeconfig: k.Kubeconfig}
	if k.EKSCluster != "" {
		cred.EKS = &kubesandbox.EKS{ClusterName: k.EKSCluster, Server: k.Server, CAData: k.CAData, AWS: e.AWS}
	}
	rc, err := kubesandbox.RESTConfig(cred)
	if err != nil {
		return nil, err
	}
	return kubesandbox.NewForConfig(cfg, rc)
}

// Pool is the runtime's warm pool, or nil when it keeps none.
func Pool(rt acs.Runtime) acs.WarmPool {
	if p, ok := rt.(acs.WarmPool); ok {
		return p
	}
	return nil
}

// parseTolerations reads ACS_KUBE_TOLERATIONS: a JSON array of
// Kubernetes tolerations, unknown fields refused.
func parseTolerations(v string) ([]corev1.Toleration, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out []corev1.Toleration
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("ACS_KUBE_TOLERATIONS must be a JSON array of tolerations: %w", err)
	}
	for i, t := range out {
		switch t.Operator {
		case "", corev1.TolerationOpEqual, corev1.TolerationOpExists:
		default:
			return nil, fmt.Errorf("ACS_KUBE_TOLERATIONS[%d]: operator %q must be Equal or Exists", i, t.Operator)
		}
	}
	return out, nil
}

// readTemplates parses ACS_KUBE_POD_TEMPLATES, inline or from a file.
func readTemplates(v string) (map[string]kubesandbox.PodTemplate, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	raw, where := v, "ACS_KUBE_POD_TEMPLATES"
	if !strings.HasPrefix(strings.TrimSpace(v), "{") {
		b, err := os.ReadFile(v)
		if err != nil {
			return nil, fmt.Errorf("ACS_KUBE_POD_TEMPLATES: %w", err)
		}
		raw, where = string(b), "ACS_KUBE_POD_TEMPLATES "+v
	}
	t, err := kubesandbox.ParseTemplates(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return t, nil
}
