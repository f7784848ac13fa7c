package cli

import (
	"os"
	"strings"
)

// serviceAccountNamespace is where a pod finds the namespace it runs in.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// DefaultNamespace is the namespace winproxy is installed in, the default of both binaries'
// --heartbeat-namespace: $POD_NAMESPACE (the chart sets it from the downward API), else the
// namespace of the pod's service account, else winproxy-system, where `make deploy` installs.
func DefaultNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if data, err := os.ReadFile(serviceAccountNamespace); err == nil {
		if ns := strings.TrimSpace(string(data)); ns != "" {
			return ns
		}
	}
	return "winproxy-system"
}
