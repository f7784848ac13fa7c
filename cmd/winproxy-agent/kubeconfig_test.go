package main

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/winproxy/winproxy/agent/hns"
)

func TestRestConfigFromHostProcessSandbox(t *testing.T) {
	sandbox := t.TempDir()
	dir := filepath.Join(sandbox, "var", "run", "secrets", "kubernetes.io", "serviceaccount")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("t"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", sandbox)
	t.Setenv("CONTAINER_SANDBOX_MOUNT_POINT", sandbox)
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")
	api, err := restConfig("")
	if err != nil {
		t.Fatal(err)
	}
	cfg := api.config
	if cfg.Host != "https://10.0.0.1:443" || cfg.BearerTokenFile != filepath.Join(dir, "token") || cfg.CAFile != filepath.Join(dir, "ca.crt") {
		t.Errorf("config = host %s, token %s, CA %s", cfg.Host, cfg.BearerTokenFile, cfg.CAFile)
	}
	if !api.inCluster || api.host != "10.0.0.1" || api.port != "443" {
		t.Errorf("api = %+v, want in-cluster 10.0.0.1:443", api)
	}

	t.Setenv("CONTAINER_SANDBOX_MOUNT_POINT", "")
	if _, err := restConfig(""); err == nil {
		t.Error("without a sandbox or in-cluster files there is no config, but got one")
	}
}

// closedPort is a loopback port nothing listens on, standing for an unprogrammed ClusterIP.
func closedPort(t *testing.T) (string, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	host, port, _ := net.SplitHostPort(addr)
	return host, port
}

func TestCheckReachable(t *testing.T) {
	ctx := context.Background()
	host, port := closedPort(t)
	noLBs := func(context.Context) ([]hns.LoadBalancer, error) { return nil, nil }
	api := &apiServer{inCluster: true, host: host, port: port}

	err := checkReachable(ctx, api, noLBs, 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "apiServer.host") || !strings.Contains(err.Error(), "ClusterIP") {
		t.Errorf("an unreachable, unprogrammed ClusterIP: %v; want an error naming apiServer.host", err)
	}

	served := func(context.Context) ([]hns.LoadBalancer, error) {
		lb := hns.LoadBalancer{FrontendVIPs: []netip.Addr{netip.MustParseAddr(host)}}
		lb.PortMapping.ExternalPort = uint16(mustAtoi(t, port))
		return []hns.LoadBalancer{lb}, nil
	}
	if err := checkReachable(ctx, api, served, 100*time.Millisecond); err == nil || strings.Contains(err.Error(), "apiServer.host") {
		t.Errorf("an unreachable address HNS serves: %v; want a plain unreachable error", err)
	}
	failing := func(context.Context) ([]hns.LoadBalancer, error) { return nil, errors.New("HNS down") }
	if err := checkReachable(ctx, api, failing, 100*time.Millisecond); err == nil || !strings.Contains(err.Error(), "HNS down") {
		t.Errorf("HNS unavailable: %v", err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	h, p, _ := net.SplitHostPort(l.Addr().String())
	if err := checkReachable(ctx, &apiServer{inCluster: true, host: h, port: p}, noLBs, time.Second); err != nil {
		t.Errorf("a reachable API server: %v", err)
	}
	if err := checkReachable(ctx, &apiServer{host: host, port: port}, noLBs, time.Second); err != nil {
		t.Errorf("a kubeconfig is not checked, got %v", err)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
