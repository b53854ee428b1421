package kubesandbox

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Credentials say how to reach and authenticate to the API server: exactly
// one of InCluster (the pod's service account), Kubeconfig (a file) or EKS
// (a token presigned with the caller's AWS credentials, e.g. a Lambda's
// IAM role, the way aws-iam-authenticator does it; no aws CLI).
type Credentials struct {
	InCluster  bool
	Kubeconfig string
	EKS        *EKS
}

// EKS names an EKS cluster's API server.
type EKS struct {
	ClusterName string
	// Server is the API server URL; CAData its PEM certificate authority.
	Server string
	CAData []byte
	// AWS holds the region and credentials that sign the token.
	AWS aws.Config
}

// RESTConfig builds the client configuration. Errors: none or several
// sources given, an unreadable kubeconfig, missing in-cluster variables,
// an incomplete EKS description.
func RESTConfig(c Credentials) (*rest.Config, error) {
	n := 0
	for _, set := range []bool{c.InCluster, c.Kubeconfig != "", c.EKS != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, fmt.Errorf("kubesandbox: give exactly one of in-cluster, kubeconfig or EKS credentials (got %d)", n)
	}
	switch {
	case c.InCluster:
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("kubesandbox: in-cluster config: %w", err)
		}
		return rc, nil
	case c.Kubeconfig != "":
		rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubesandbox: kubeconfig %s: %w", c.Kubeconfig, err)
		}
		return rc, nil
	}
	e := c.EKS
	if e.ClusterName == "" || e.Server == "" || len(e.CAData) == 0 || e.AWS.Region == "" || e.AWS.Credentials == nil {
		return nil, fmt.Errorf("kubesandbox: EKS credentials need the cluster name, server, CA data, region and AWS credentials")
	}
	ts := &eksTokens{cluster: e.ClusterName, presign: sts.NewPresignClient(sts.NewFromConfig(e.AWS))}
	rc := &rest.Config{Host: e.Server, TLSClientConfig: rest.TLSClientConfig{CAData: e.CAData}}
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return &bearer{next: rt, tokens: ts} }
	return rc, nil
}

// eksTokens presigns sts:GetCallerIdentity for the cluster and caches the
// token (valid 15 minutes; renewed after 10).
type eksTokens struct {
	cluster string
	presign *sts.PresignClient
	now     func() time.Time

	mu      sync.Mutex
	token   string
	expires time.Time
}

const eksTokenPrefix = "k8s-aws-v1."

// Token returns a valid bearer token.
func (t *eksTokens) Token(ctx context.Context) (string, error) {
	now := time.Now
	if t.now != nil {
		now = t.now
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && now().Before(t.expires) {
		return t.token, nil
	}
	req, err := t.presign.PresignGetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}, func(o *sts.PresignOptions) {
		o.ClientOptions = append(o.ClientOptions, func(so *sts.Options) {
			so.APIOptions = append(so.APIOptions,
				smithyhttp.AddHeaderValue("x-k8s-aws-id", t.cluster),
				smithyhttp.AddHeaderValue("X-Amz-Expires", "60"))
		})
	})
	if err != nil {
		return "", fmt.Errorf("kubesandbox: presign the EKS token: %w", err)
	}
	t.token = eksTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(req.URL))
	t.expires = now().Add(10 * time.Minute)
	return t.token, nil
}

type bearer struct {
	next   http.RoundTripper
	tokens *eksTokens
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := b.tokens.Token(r.Context())
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return b.next.RoundTrip(r)
}

// decodeEKSToken returns the presigned URL inside a token (for tests and
// diagnostics).
func decodeEKSToken(tok string) (string, error) {
	if !strings.HasPrefix(tok, eksTokenPrefix) {
		return "", fmt.Errorf("not an EKS token")
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, eksTokenPrefix))
	return string(b), err
}
