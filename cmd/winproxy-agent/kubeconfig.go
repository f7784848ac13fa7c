package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/rest"

	"github.com/winproxy/winproxy/agent/hns"
	"github.com/winproxy/winproxy/internal/cli"
)

// apiServer is where the agent found the API server.
type apiServer struct {
	config *rest.Config
	// inCluster is set when the address came from KUBERNETES_SERVICE_HOST/PORT. Unless the chart
	// overrode them with a node-reachable address, that is the `kubernetes` Service ClusterIP,
	// which on a node without kube-proxy only answers once this agent has programmed it.
	inCluster  bool
	host, port string
}

// restConfig finds the API server. In a pod (neither --kubeconfig nor $KUBECONFIG, and
// KUBERNETES_SERVICE_HOST/PORT set): the in-cluster service account or, in a HostProcess pod on a
// host without bind mounts (containerd before 1.7 or older Windows builds), the service account
// under $CONTAINER_SANDBOX_MOUNT_POINT, where such hosts put it. Otherwise client-go's loading
// rules (cli.RESTConfig): --kubeconfig, $KUBECONFIG, ~/.kube/config, in-cluster.
func restConfig(kubeconfig string) (*apiServer, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if kubeconfig == "" && os.Getenv("KUBECONFIG") == "" && host != "" && port != "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return &apiServer{config: cfg, inCluster: true, host: host, port: port}, nil
		}
		if cfg, err := sandboxConfig(host, port); err == nil {
			return &apiServer{config: cfg, inCluster: true, host: host, port: port}, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	cfg, err := cli.RESTConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return &apiServer{config: cfg}, nil
}

// sandboxConfig reads the service account a HostProcess pod finds under its sandbox mount point.
func sandboxConfig(host, port string) (*rest.Config, error) {
	sandbox := os.Getenv("CONTAINER_SANDBOX_MOUNT_POINT")
	if sandbox == "" {
		return nil, fmt.Errorf("no in-cluster service account and no HostProcess sandbox: %w", os.ErrNotExist)
	}
	dir := filepath.Join(sandbox, "var", "run", "secrets", "kubernetes.io", "serviceaccount")
	token := filepath.Join(dir, "token")
	if _, err := os.Stat(token); err != nil {
		return nil, fmt.Errorf("no service-account token under the HostProcess sandbox: %w", err)
	}
	return &rest.Config{
		Host:            "https://" + net.JoinHostPort(host, port),
		BearerTokenFile: token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(dir, "ca.crt")},
	}, nil
}

// apiServerSetting names what an admin sets to give the agent a node-reachable API server.
const apiServerSetting = "the Helm values apiServer.host and apiServer.port (when they are empty the chart looks the " +
	"address up in the EndpointSlice default/kubernetes, then kube-public/cluster-info), the agent's apiserver-endpoint ConfigMap " +
	"(KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT), or --kubeconfig; see docs/install.md"

// checkReachable makes sure, before anything waits on the API server, that an in-cluster address
// can be reached. When it cannot and no HNS load balancer serves it, the address is the
// `kubernetes` Service ClusterIP on a node where nothing programmed it yet (after a reboot HNS is
// empty): waiting would hang forever, so the agent fails fast and says what to set.
func checkReachable(ctx context.Context, api *apiServer, lbs func(context.Context) ([]hns.LoadBalancer, error), wait time.Duration) error {
	if !api.inCluster {
		return nil
	}
	addr := net.JoinHostPort(api.host, api.port)
	var dialErr error
	deadline := time.Now().Add(wait)
	for {
		d := net.Dialer{Timeout: min(2*time.Second, wait)}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = conn.Close()
			return nil
		}
		dialErr = err
		if time.Now().Add(time.Second).After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	served, err := servedByHNS(ctx, api.host, api.port, lbs)
	switch {
	case err != nil:
		return fmt.Errorf("the API server at %s (KUBERNETES_SERVICE_HOST/PORT) is not reachable: %w; HNS could not be asked whether it serves that address: %w", addr, dialErr, err)
	case served:
		return fmt.Errorf("the API server at %s (KUBERNETES_SERVICE_HOST/PORT, served by an HNS load balancer) is not reachable: %w", addr, dialErr)
	}
	return fmt.Errorf("the API server at %s (KUBERNETES_SERVICE_HOST/PORT) is not reachable (%v) and no HNS load balancer serves that address: "+
		"it is the `kubernetes` Service ClusterIP, which on a Windows node without kube-proxy only answers once this agent has programmed it, "+
		"so after a reboot it never does. Give the agent an API server address the node reaches directly: %s", addr, dialErr, apiServerSetting)
}

// servedByHNS reports whether an HNS load balancer has host:port as its frontend.
func servedByHNS(ctx context.Context, host, port string, lbs func(context.Context) ([]hns.LoadBalancer, error)) (bool, error) {
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false, nil // a name, not a ClusterIP
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return false, nil
	}
	list, err := lbs(ctx)
	if err != nil {
		return false, err
	}
	for _, lb := range list {
		if lb.VIP() == ip.Unmap() && int(lb.PortMapping.ExternalPort) == p {
			return true, nil
		}
	}
	return false, nil
}
