package kubesandbox

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Config says where and how sandboxes run.
type Config struct {
	// Namespace holds every sandbox object (default "acs-sandboxes").
	Namespace string
	// BaseHost and Separator build each agent server's host:
	// {runtime_id}{Separator}{BaseHost} (Separator defaults to ".").
	BaseHost  string
	Separator string
	// Scheme of agent-server URLs (default "https").
	Scheme string
	// IngressClassName and TLSSecretName shape the Ingress (optional).
	IngressClassName string
	TLSSecretName    string
	// Gateway, when set, routes each sandbox host with a Gateway API
	// HTTPRoute attached to this Gateway instead of an Ingress (TLS is
	// then the Gateway's listeners' business).
	Gateway *GatewayRef
	// Templates turn sandbox specs into pods, by spec id; a spec without
	// one uses Default.
	Templates map[string]PodTemplate
	Default   PodTemplate
	// Env is set in every sandbox besides the spec's and the start
	// request's (the same for all: warm pods are started with it).
	Env map[string]string
	// Tolerations and NodeSelector place sandbox pods.
	Tolerations  []corev1.Toleration
	NodeSelector map[string]string
	// ReadyTimeout bounds how long Archive waits for a temporary pod that
	// serves a paused sandbox's workspace (default 2m).
	ReadyTimeout time.Duration
	// HTTPClient calls agent servers (Archive); default http.DefaultClient.
	HTTPClient *http.Client
	// URLFor, when set, replaces the agent-server URL built from Scheme,
	// the runtime id, Separator and BaseHost (tests route to stand-ins).
	URLFor func(runtimeID string) string
}

// GatewayRef names a Gateway API Gateway (gateway.networking.k8s.io/v1).
type GatewayRef struct {
	// Namespace defaults to Config.Namespace.
	Namespace, Name string
}

// PodTemplate is what a sandbox spec becomes on Kubernetes.
type PodTemplate struct {
	Image           string                      `json:"image"`
	ImagePullPolicy corev1.PullPolicy           `json:"image_pull_policy,omitempty"`
	Resources       corev1.ResourceRequirements `json:"resources,omitempty"`
	// RuntimeClassName selects a sandboxed runtime (gVisor, Kata).
	RuntimeClassName string `json:"runtime_class_name,omitempty"`
	// WorkspaceSize is the PVC's request (default 10Gi); StorageClass its
	// class (the cluster default when empty).
	WorkspaceSize resource.Quantity `json:"workspace_size,omitempty"`
	StorageClass  string            `json:"storage_class,omitempty"`
	// WarmPool is how many started, unclaimed pods to keep for the spec.
	WarmPool int `json:"warm_pool,omitempty"`
	// ExtraPorts are served besides the agent server, each at
	// {name}-{runtime_id}{Separator}{BaseHost}.
	ExtraPorts []Port `json:"extra_ports,omitempty"`
}

// Port is an extra port a sandbox exposes.
type Port struct {
	Name string `json:"name"`
	Port int32  `json:"port"`
}

// AgentPort is where the agent server listens in the pod.
const AgentPort = 8000

var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	labelValueRE = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
)

// ParseTemplates reads ACS_KUBE_POD_TEMPLATES: a JSON object from spec id
// to PodTemplate. Unknown fields and templates without an image are
// errors.
func ParseTemplates(raw string) (map[string]PodTemplate, error) {
	out := map[string]PodTemplate{}
	if strings.TrimSpace(raw) == "" {
		return out, nil
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("pod templates: %w", err)
	}
	for id, t := range out {
		if err := t.validate(); err != nil {
			return nil, fmt.Errorf("pod template %q: %w", id, err)
		}
	}
	return out, nil
}

func (t PodTemplate) validate() error {
	if t.Image == "" {
		return fmt.Errorf("image is required")
	}
	if t.WarmPool < 0 || t.WarmPool > 100 {
		return fmt.Errorf("warm_pool %d is outside 0..100", t.WarmPool)
	}
	seen := map[string]bool{}
	for _, p := range t.ExtraPorts {
		if !dnsLabel.MatchString(p.Name) || len(p.Name) > 15 || seen[p.Name] || p.Name == "http" {
			return fmt.Errorf("extra port name %q must be a unique DNS label of at most 15 characters (not \"http\")", p.Name)
		}
		if p.Port < 1 || p.Port > 65535 || p.Port == AgentPort {
			return fmt.Errorf("extra port %d is not a usable port", p.Port)
		}
		seen[p.Name] = true
	}
	return nil
}

func (c *Config) defaults() error {
	if c.Namespace == "" {
		c.Namespace = "acs-sandboxes"
	}
	if c.Separator == "" {
		c.Separator = "."
	}
	if c.Scheme == "" {
		c.Scheme = "https"
	}
	if c.ReadyTimeout == 0 {
		c.ReadyTimeout = 2 * time.Minute
	}
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
	if c.BaseHost == "" {
		return fmt.Errorf("kubesandbox: BaseHost is required")
	}
	if !dnsLabel.MatchString(c.Namespace) {
		return fmt.Errorf("kubesandbox: namespace %q is not a DNS label", c.Namespace)
	}
	if g := c.Gateway; g != nil {
		if g.Namespace == "" {
			g.Namespace = c.Namespace
		}
		if !dnsLabel.MatchString(g.Namespace) || g.Name == "" {
			return fmt.Errorf("kubesandbox: gateway %s/%s is not a namespace and name", g.Namespace, g.Name)
		}
	}
	for id, t := range c.Templates {
		if err := t.validate(); err != nil {
			return fmt.Errorf("kubesandbox: pod template %q: %w", id, err)
		}
	}
	if c.Default.Image != "" {
		if err := c.Default.validate(); err != nil {
			return fmt.Errorf("kubesandbox: default pod template: %w", err)
		}
	}
	return nil
}

// template returns the pod template of a spec.
func (c *Config) template(specID string) (PodTemplate, error) {
	t, ok := c.Templates[specID]
	if !ok {
		t = c.Default
	}
	if t.Image == "" {
		return t, fmt.Errorf("kubesandbox: no pod template (image) for sandbox spec %q", specID)
	}
	if t.WorkspaceSize.IsZero() {
		t.WorkspaceSize = resource.MustParse("10Gi")
	}
	return t, nil
}

// agentURL is the agent server's base URL.
func (c *Config) agentURL(runtimeID string) string {
	if c.URLFor != nil {
		return c.URLFor(runtimeID)
	}
	return c.Scheme + "://" + c.host(runtimeID, "")
}

// host is the agent server's (or an extra port's) public host name.
func (c *Config) host(runtimeID, port string) string {
	if port != "" {
		runtimeID = port + "-" + runtimeID
	}
	return runtimeID + c.Separator + c.BaseHost
}
