package kubesandbox

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

func TestEKSToken(t *testing.T) {
	var seen string
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"kind":"APIVersions","versions":["v1"]}`))
	}))
	defer api.Close()
	awsCfg := aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "session-token")}
	rc, err := RESTConfig(Credentials{EKS: &EKS{ClusterName: "acs-prod", Server: api.URL, CAData: []byte("unused"), AWS: awsCfg}})
	if err != nil {
		t.Fatal(err)
	}
	rt := rc.WrapTransport(api.Client().Transport)
	res, err := rt.RoundTrip(httptest.NewRequest("GET", api.URL+"/api", nil).WithContext(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	tok, ok := strings.CutPrefix(seen, "Bearer ")
	if !ok {
		t.Fatalf("Authorization %q", seen)
	}
	raw, err := decodeEKSToken(tok)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if u.Host != "sts.eu-west-1.amazonaws.com" || q.Get("Action") != "GetCallerIdentity" || q.Get("X-Amz-Expires") != "60" ||
		!strings.Contains(q.Get("X-Amz-SignedHeaders"), "x-k8s-aws-id") || !strings.HasPrefix(q.Get("X-Amz-Credential"), "AKIDEXAMPLE/") ||
		q.Get("X-Amz-Security-Token") != "session-token" || q.Get("X-Amz-Signature") == "" {
		t.Fatalf("presigned URL %s", raw)
	}
	// Cached, then renewed after ten minutes.
	ts := rt.(*bearer).tokens
	again, _ := ts.Token(context.Background())
	base := time.Now()
	ts.now = func() time.Time { return base.Add(11 * time.Minute) }
	if _, err := ts.Token(context.Background()); err != nil {
		t.Fatal(err)
	}
	// (The presigned URL itself carries the real clock's second, so the
	// renewal shows in the new expiry.)
	if again != tok || !ts.expires.After(base.Add(20*time.Minute)) {
		t.Fatalf("the token is not cached for ten minutes and renewed after (expires %s)", ts.expires)
	}
}

func TestRESTConfigSources(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:16443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600)
	rc, err := RESTConfig(Credentials{Kubeconfig: kc})
	if err != nil || rc.Host != "https://127.0.0.1:16443" || rc.BearerToken != "abc" {
		t.Fatalf("kubeconfig: %+v %v", rc, err)
	}
	for name, c := range map[string]Credentials{
		"none":       {},
		"two":        {InCluster: true, Kubeconfig: kc},
		"missing":    {Kubeconfig: filepath.Join(t.TempDir(), "nope")},
		"in-cluster": {InCluster: true}, // KUBERNETES_SERVICE_HOST is not set here
		"eks without a cluster name": {EKS: &EKS{Server: "https://x", CAData: []byte("x"),
			AWS: aws.Config{Region: "r", Credentials: credentials.NewStaticCredentialsProvider("a", "b", "")}}},
	} {
		if _, err := RESTConfig(c); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
