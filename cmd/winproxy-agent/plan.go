package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/winproxy/winproxy/agent/hnsdump"
	"github.com/winproxy/winproxy/agent/plan"
	"github.com/winproxy/winproxy/api/v1alpha1"
	"github.com/winproxy/winproxy/internal/cli"
	"github.com/winproxy/winproxy/internal/termsafe"
)

type planOptions struct {
	file, output, kubeconfig, node, dump string
}

func newPlanCommand() *cobra.Command {
	var o planOptions
	cmd := &cobra.Command{
		Use:   "plan [-f FILE] [--kubeconfig PATH] [--node NAME] [--hns DUMP] [-o table|json|yaml]",
		Short: "Preview the HNS objects and status of a node, from a file or a live cluster",
		Long: `plan shows what the agent would program into one Windows node's HNS and the status it would report,
without touching any HNS.

Offline, -f names a plan file describing the node: its resolved config (a WindowsProxyNode, or a
WindowsProxyConfig plus the node's name), Nodes, Services, EndpointSlices and its HNS host (see
docs/plan.md).

With --kubeconfig (or without -f, through $KUBECONFIG, ~/.kube/config or the in-cluster service
account), the node named by --node is read from the cluster as its agent reads it: its
WindowsProxyNode, the Nodes, and the Services and EndpointSlices kube-proxy would proxy. -f may then
give a WindowsProxyConfig manifest as it is applied (e.g. config/samples/calico-overlay-dsr.yaml)
to preview that config on the node instead; such a file (one that lists no nodes) with --node also
reads the cluster of an exported $KUBECONFIG.

--hns names the host's saved 'winproxy-agent hns dump --network NAME -o json': the plan reads the
host from it and also lists the HNS calls the agent would make against it and what becomes of each
load balancer and endpoint there, foreign ones (kube-proxy's) included. Without it and without a
host in the file, the host a CNI usually leaves is assumed, and the plan says what it assumed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPlan(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), o, cmd.Flags().Changed("kubeconfig"))
		},
	}
	cmd.Flags().StringVarP(&o.file, "file", "f", "", "plan file, or a WindowsProxyConfig or WindowsProxyNode manifest; YAML or JSON (- for standard input)")
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "output format: "+strings.Join(plan.Formats, ", "))
	cmd.Flags().StringVar(&o.kubeconfig, "kubeconfig", "", "read the node, its config, Services and EndpointSlices from this cluster (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
	cmd.Flags().StringVar(&o.node, "node", "", "the node to plan for (required with a cluster, or with a WindowsProxyConfig manifest)")
	cmd.Flags().StringVar(&o.dump, "hns", "", "the host's HNS as winproxy-agent hns dump --network NAME -o json saved it")
	return cmd
}

func runPlan(ctx context.Context, stdin io.Reader, out io.Writer, o planOptions, kubeconfigSet bool) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if !slices.Contains(plan.Formats, o.output) {
		return fmt.Errorf("-o %q: must be one of %s", o.output, strings.Join(plan.Formats, ", "))
	}
	f := &plan.File{}
	if o.file != "" {
		data, err := readInput(stdin, o.file)
		if err != nil {
			return err
		}
		if f, err = plan.Parse(data); err != nil {
			return fmt.Errorf("%s: %w", o.file, err)
		}
	}
	live := usesCluster(o, f, kubeconfigSet)
	if live && o.node == "" {
		return errors.New("--node is required to plan from a cluster (or give a plan file with -f)")
	}
	if !live && o.node != "" {
		if f.Node != "" && f.Node != o.node {
			return fmt.Errorf("%s is for node %q, not %q", o.file, f.Node, o.node)
		}
		f.Node = o.node
	}
	if o.dump != "" {
		data, err := os.ReadFile(o.dump)
		if err != nil {
			return err
		}
		f.Dump = &hnsdump.Dump{}
		if err := yaml.UnmarshalStrict(data, f.Dump); err != nil {
			return fmt.Errorf("%s: not an hns dump: %w", o.dump, err)
		}
	}
	source := o.file
	if live {
		c, err := clusterClient(o.kubeconfig)
		if err != nil {
			return err
		}
		if err := plan.FromCluster(ctx, c, o.node, f); err != nil {
			return err
		}
		source = "node " + o.node
	}
	p, err := plan.Build(f)
	if err != nil {
		return fmt.Errorf("%s:\n%w", source, err)
	}
	// Names and IDs of a dump are whatever its author made them: no escape sequence reaches the
	// terminal.
	return plan.Print(termsafe.NewWriter(out), p, o.output)
}

// usesCluster says whether the plan reads the cluster: with --kubeconfig, without -f, or with a
// file that lists no nodes for --node while $KUBECONFIG names a cluster (a config manifest such as
// config/samples/*.yaml, previewed on a node of that cluster). A complete plan file stays offline.
func usesCluster(o planOptions, f *plan.File, kubeconfigSet bool) bool {
	if kubeconfigSet || o.file == "" {
		return true
	}
	return o.node != "" && len(f.Nodes) == 0 && os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != ""
}

// clusterClient reads the cluster of a kubeconfig found by client-go's rules: the path given, or
// $KUBECONFIG, or ~/.kube/config, or the in-cluster service account.
func clusterClient(kubeconfig string) (client.Client, error) {
	cfg, err := cli.RESTConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

func readInput(stdin io.Reader, file string) ([]byte, error) {
	if file == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(file)
}
