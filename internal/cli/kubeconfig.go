package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// RESTConfig finds the API server as kubectl does, through client-go's loading rules: the
// kubeconfig file given (--kubeconfig), else the files of $KUBECONFIG, else ~/.kube/config, else the
// in-cluster service account. When none gives a cluster, the error lists what was tried, instead of
// client-go's advice about KUBERNETES_MASTER, which no current tool reads.
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	switch {
	case err == nil:
		return cfg, nil
	case kubeconfig != "":
		if _, statErr := os.Stat(kubeconfig); statErr != nil {
			return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, statErr)
		}
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	case clientcmd.IsEmptyConfig(err):
		return nil, fmt.Errorf("no cluster to talk to: %s; give --kubeconfig PATH or export KUBECONFIG", strings.Join(tried(rules), "; "))
	}
	return nil, fmt.Errorf("reading the kubeconfig (%s): %w", strings.Join(rules.Precedence, string(os.PathListSeparator)), err)
}

// tried says, for each place the loading rules look, why it gave no cluster.
func tried(rules *clientcmd.ClientConfigLoadingRules) []string {
	out := []string{"--kubeconfig not given"}
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		out = append(out, "$KUBECONFIG names "+describeFiles(rules.Precedence))
	} else {
		out = append(out, "$KUBECONFIG not set", describeFiles(rules.Precedence))
	}
	if _, err := rest.InClusterConfig(); err != nil {
		out = append(out, "not in a pod ("+inClusterReason(err)+")")
	}
	return out
}

// describeFiles says of each kubeconfig file whether it exists and is empty.
func describeFiles(paths []string) string {
	var parts []string
	for _, p := range paths {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			parts = append(parts, p+" (does not exist)")
		} else {
			parts = append(parts, p+" (no cluster in it)")
		}
	}
	return strings.Join(parts, ", ")
}

func inClusterReason(err error) string {
	if errors.Is(err, rest.ErrNotInCluster) {
		return "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT not set"
	}
	return err.Error()
}
