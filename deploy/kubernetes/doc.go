// Package kubernetes holds the Kubernetes manifests ACS's sandboxes need on
// a cluster (a kustomize base: kubectl apply -k deploy/kubernetes) and the
// tests that parse and check them. It has no code.
package kubernetes
