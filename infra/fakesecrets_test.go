package main

import (
	"crypto/rand"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeSecrets serves Secrets Manager's GetSecretValue (JSON 1.1,
// X-Amz-Target secretsmanager.GetSecretValue) for the secrets the test
// holds. No local Secrets Manager emulator is to be had here (LocalStack
// and moto are Python servers outside the registries this project uses),
// so this small stand-in serves the one call the functions make; it also
// refuses unsigned requests, as Secrets Manager would.
type fakeSecrets struct {
	srv *httptest.Server
	mu  sync.Mutex
	// values by secret id (ARN or name), and how often each was read.
	values map[string]string
	reads  map[string]int
}

func newFakeSecrets(t *testing.T) *fakeSecrets {
	f := &fakeSecrets{values: map[string]string{}, reads: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeSecrets) put(id, value string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.values[id] = value
}

func (f *fakeSecrets) readsOf(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads[id]
}

func (f *fakeSecrets) serve(w http.ResponseWriter, r *http.Request) {
	fail := func(code int, typ, msg string) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		fail(400, "MissingAuthenticationTokenException", "unsigned request")
		return
	}
	if r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" {
		fail(400, "InvalidAction", "only GetSecretValue is served here")
		return
	}
	b, _ := io.ReadAll(r.Body)
	var in struct{ SecretId string }
	if err := json.Unmarshal(b, &in); err != nil || in.SecretId == "" {
		fail(400, "InvalidParameterException", "SecretId is required")
		return
	}
	f.mu.Lock()
	v, ok := f.values[in.SecretId]
	if ok {
		f.reads[in.SecretId]++
	}
	f.mu.Unlock()
	if !ok {
		fail(400, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	json.NewEncoder(w).Encode(map[string]any{"ARN": in.SecretId, "Name": in.SecretId, "SecretString": v, "VersionId": "v1"})
}

// generate makes a value as a GenerateSecretString asks (length,
// punctuation excluded or not).
func generate(spec map[string]any) string {
	n := 32
	if l, ok := spec["PasswordLength"].(float64); ok {
		n = int(l)
	}
	alphabet := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	if p, _ := spec["ExcludePunctuation"].(bool); !p {
		alphabet += "!#$%&()*+,-./:;<=>?@[]^_{|}~"
	}
	var b strings.Builder
	for range n {
		i, _ := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		b.WriteByte(alphabet[i.Int64()])
	}
	return b.String()
}
