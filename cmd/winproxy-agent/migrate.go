package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/internal/migrate"
)

type migrateOptions struct {
	commandLine, script, config, manifest, daemonSet, kubeconfig, name string
}

func newMigrateCommand() *cobra.Command {
	var o migrateOptions
	cmd := &cobra.Command{
		Use:   "migrate (--command-line TEXT | --script FILE | --config FILE | --manifest FILE | --daemonset NAMESPACE/NAME) [--name NAME]",
		Short: "Turn Windows kube-proxy's flags, configuration or DaemonSet into a WindowsProxyConfig",
		Long: `migrate reads what Windows kube-proxy runs with and prints the WindowsProxyConfig that gives the
agent the same settings, selecting the nodes labelled winproxy.io/managed=true, ready for the
node-by-node migration of docs/install.md. On standard error it writes one warning per setting
that winproxy has no equivalent for or gives another meaning (e.g. --nodeport-addresses,
--masquerade-all, a source VIP computed on each node).

The sources can be combined; later ones win, as kube-proxy's flags win over its file:
  --config FILE         a KubeProxyConfiguration file (kubeproxy.config.k8s.io/v1alpha1), read with
                        upstream's own types
  --daemonset NS/NAME   the kube-proxy DaemonSet of the cluster (--kubeconfig, $KUBECONFIG, ...):
                        its containers' command lines and environment ($KUBE_NETWORK) and the
                        ConfigMaps it mounts (a KubeProxyConfiguration, start scripts)
  --manifest FILE       the same, from a YAML file with the DaemonSet and its ConfigMaps
  --script FILE         a kube-proxy command line, or a start script that builds one (- for
                        standard input); variables it assigns literally are resolved
  --command-line TEXT   a kube-proxy command line`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMigrate(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.commandLine, "command-line", "", "a kube-proxy command line")
	fs.StringVar(&o.script, "script", "", "a file holding a kube-proxy command line or a start script that runs kube-proxy (- for standard input)")
	fs.StringVar(&o.config, "config", "", "a KubeProxyConfiguration file, as kube-proxy --config reads it")
	fs.StringVar(&o.manifest, "manifest", "", "a YAML file with the kube-proxy DaemonSet and the ConfigMaps it mounts")
	fs.StringVar(&o.daemonSet, "daemonset", "", "the kube-proxy DaemonSet to read from the cluster, as NAMESPACE/NAME (e.g. kube-system/kube-proxy-windows)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "with --daemonset: the cluster's kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
	fs.StringVar(&o.name, "name", "", "name of the WindowsProxyConfig (default: the DaemonSet's name, else kube-proxy)")
	return cmd
}

func runMigrate(ctx context.Context, stdin io.Reader, out, errOut io.Writer, o migrateOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.commandLine == "" && o.script == "" && o.config == "" && o.manifest == "" && o.daemonSet == "" {
		return errors.New("nothing to migrate: give --command-line, --script, --config, --manifest or --daemonset")
	}
	in := migrate.NewInput()
	name, err := readMigrateSources(ctx, stdin, in, o)
	if err != nil {
		return err
	}
	if o.name != "" {
		name = o.name
	}
	res, err := migrate.Translate(in, name)
	if err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(errOut, "Warning:", w)
	}
	return printConfig(out, res.Config)
}

// readMigrateSources reads every source given, the file first and the command lines last; it
// returns the name the config gets by default.
func readMigrateSources(ctx context.Context, stdin io.Reader, in *migrate.Input, o migrateOptions) (string, error) {
	name := "kube-proxy"
	if o.config != "" {
		data, err := os.ReadFile(o.config)
		if err != nil {
			return "", err
		}
		if err := in.AddConfig(data, o.config); err != nil {
			return "", err
		}
	}
	if o.manifest != "" {
		n, err := addManifest(ctx, in, o.manifest)
		if err != nil {
			return "", err
		}
		name = n
	}
	if o.daemonSet != "" {
		n, err := addLiveDaemonSet(ctx, in, o.daemonSet, o.kubeconfig)
		if err != nil {
			return "", err
		}
		name = n
	}
	if o.script != "" {
		data, err := readInput(stdin, o.script)
		if err != nil {
			return "", err
		}
		in.AddCommandLine(string(data), o.script)
	}
	if o.commandLine != "" {
		in.AddCommandLine(o.commandLine, "--command-line")
	}
	return name, nil
}

func addManifest(ctx context.Context, in *migrate.Input, file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	m, err := migrate.ReadManifests(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	if len(m.DaemonSets) != 1 {
		return "", fmt.Errorf("%s holds %d DaemonSets: want the one of kube-proxy", file, len(m.DaemonSets))
	}
	ds := m.DaemonSets[0]
	return ds.Name, in.AddDaemonSet(ctx, ds, m.ConfigMap)
}

func addLiveDaemonSet(ctx context.Context, in *migrate.Input, ref, kubeconfig string) (string, error) {
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" {
		return "", fmt.Errorf("--daemonset %q: want NAMESPACE/NAME, e.g. kube-system/kube-proxy-windows", ref)
	}
	c, err := clusterClient(kubeconfig)
	if err != nil {
		return "", err
	}
	ds := &appsv1.DaemonSet{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ds); err != nil {
		return "", fmt.Errorf("reading DaemonSet %s: %w", ref, err)
	}
	get := func(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
		cm := &corev1.ConfigMap{}
		return cm, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cm)
	}
	return ds.Name, in.AddDaemonSet(ctx, ds, get)
}

// printConfig writes the config as kubectl get -o yaml would, without status and empty metadata.
func printConfig(out io.Writer, cfg runtime.Object) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cfg)
	if err != nil {
		return err
	}
	delete(obj, "status")
	if meta, ok := obj["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	return (&printers.YAMLPrinter{}).PrintObj(&unstructured.Unstructured{Object: obj}, out)
}
