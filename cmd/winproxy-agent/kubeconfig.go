package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
)

// restConfig finds the API server: --kubeconfig, $KUBECONFIG, the in-cluster service account, or,
// in a HostProcess pod on a host without bind mounts (containerd before 1.7 or older Windows
// builds), the service account under $CONTAINER_SANDBOX_MOUNT_POINT, where such hosts put it.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		// controller-runtime reads the kubeconfig path from this variable.
		if err := os.Setenv("KUBECONFIG", kubeconfig); err != nil {
			return nil, err
		}
	}
	cfg, err := config.GetConfig()
	if err == nil {
		return cfg, nil
	}
	sandbox := os.Getenv("CONTAINER_SANDBOX_MOUNT_POINT")
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if kubeconfig != "" || sandbox == "" || host == "" || port == "" {
		return nil, err
	}
	dir := filepath.Join(sandbox, "var", "run", "secrets", "kubernetes.io", "serviceaccount")
	token := filepath.Join(dir, "token")
	if _, serr := os.Stat(token); serr != nil {
		return nil, fmt.Errorf("%w; no service-account token under the HostProcess sandbox either: %w", err, serr)
	}
	return &rest.Config{
		Host:            "https://" + net.JoinHostPort(host, port),
		BearerTokenFile: token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(dir, "ca.crt")},
	}, nil
}
