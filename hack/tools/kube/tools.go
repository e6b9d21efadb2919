//go:build tools

// Package tools pins the Kubernetes commands that hack/tools/build.sh
// compiles: the control plane for the local cluster, and the kubelet and
// kube-proxy of its optional real node. They are built in one go build so
// that they share compiled packages.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
