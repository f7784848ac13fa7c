//go:build tools

// Package tools records the packages the conformance suite builds from this module, so that
// go mod tidy keeps their dependencies (winkernel's files are Windows-only; tidy reads every
// build tag).
package tools

import (
	_ "github.com/Microsoft/hnslib/hcn"
	_ "k8s.io/kubernetes/pkg/proxy/winkernel"
	_ "k8s.io/kubernetes/pkg/proxy/winkernel/testing"
)
