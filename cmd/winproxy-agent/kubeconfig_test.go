package main

import (
	"os"
	"path/filepath"
	"testing"
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
	t.Setenv("KUBECONFIG", filepath.Join(sandbox, "missing"))
	t.Setenv("HOME", sandbox)
	t.Setenv("CONTAINER_SANDBOX_MOUNT_POINT", sandbox)
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")
	cfg, err := restConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://10.0.0.1:443" || cfg.BearerTokenFile != filepath.Join(dir, "token") || cfg.CAFile != filepath.Join(dir, "ca.crt") {
		t.Errorf("config = host %s, token %s, CA %s", cfg.Host, cfg.BearerTokenFile, cfg.CAFile)
	}

	t.Setenv("CONTAINER_SANDBOX_MOUNT_POINT", "")
	if _, err := restConfig(""); err == nil {
		t.Error("without a sandbox or in-cluster files there is no config, but got one")
	}
}
