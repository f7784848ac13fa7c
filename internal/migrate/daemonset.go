package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// ConfigMapGetter finds a ConfigMap of the DaemonSet's namespace: in a cluster, or among the
// manifests of a file. A ConfigMap that does not exist is an apierrors NotFound error.
type ConfigMapGetter func(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)

// AddDaemonSet reads what a kube-proxy DaemonSet gives kube-proxy: the ConfigMaps it mounts (a
// KubeProxyConfiguration, start scripts), each container's environment, command and arguments.
func (in *Input) AddDaemonSet(ctx context.Context, ds *appsv1.DaemonSet, get ConfigMapGetter) error {
	from := "DaemonSet " + ds.Namespace + "/" + ds.Name
	pod := ds.Spec.Template.Spec
	before := in.flags
	for _, name := range mountedConfigMaps(pod) {
		cm, err := get(ctx, ds.Namespace, name)
		if apierrors.IsNotFound(err) {
			in.Note("%s mounts ConfigMap %s, which was not found: its settings are not read (read the DaemonSet from the cluster, or give the ConfigMap in the same file)", from, name)
			continue
		} else if err != nil {
			return err
		}
		if err := in.addConfigMap(cm); err != nil {
			return err
		}
	}
	for _, c := range pod.Containers {
		if err := in.addContainerEnv(ctx, ds.Namespace, c, get); err != nil {
			return err
		}
		in.AddCommandLine(strings.Join(append(append([]string{}, c.Command...), c.Args...), " "), from+" container "+c.Name)
	}
	if in.flags == before {
		for _, c := range pod.Containers {
			what := "its image's entrypoint"
			if script := imageScript(c); script != "" {
				what = script + ", a script of its image"
			}
			in.hidden = append(in.hidden, fmt.Sprintf("%s: container %s runs %s (%s), so the kube-proxy flags it passes are not in the cluster: "+
				"give that script (or the command line it runs) with --script to translate them too", from, c.Name, what, c.Image))
		}
	}
	return nil
}

// mountedConfigMaps are the ConfigMaps of the pod's volumes, projected ones included.
func mountedConfigMaps(pod corev1.PodSpec) []string {
	var out []string
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil {
			out = append(out, v.ConfigMap.Name)
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					out = append(out, s.ConfigMap.Name)
				}
			}
		}
	}
	return out
}

// addConfigMap reads a mounted ConfigMap: KubeProxyConfiguration files and start scripts.
func (in *Input) addConfigMap(cm *corev1.ConfigMap) error {
	for key, data := range cm.Data {
		from := fmt.Sprintf("ConfigMap %s/%s key %s", cm.Namespace, cm.Name, key)
		switch {
		case strings.Contains(data, "kind: KubeProxyConfiguration"):
			if err := in.AddConfig([]byte(data), from); err != nil {
				return err
			}
		case isScript(key):
			in.AddCommandLine(data, from)
		}
	}
	return nil
}

func isScript(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".ps1", ".cmd", ".bat", ".sh":
		return true
	}
	return false
}

// addContainerEnv records the container's literal environment and what it takes from ConfigMaps.
func (in *Input) addContainerEnv(ctx context.Context, ns string, c corev1.Container, get ConfigMapGetter) error {
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef == nil {
			continue
		}
		cm, err := get(ctx, ns, ef.ConfigMapRef.Name)
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		for k, v := range cm.Data {
			in.SetEnv(ef.Prefix+k, v)
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			in.SetEnv(e.Name, e.Value)
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm, err := get(ctx, ns, ref.Name)
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			if cm != nil {
				if v, ok := cm.Data[ref.Key]; ok {
					in.SetEnv(e.Name, v)
				}
			}
		}
	}
	return nil
}

// scriptArg is a script a container runs (start.ps1, run.sh).
var scriptArg = regexp.MustCompile(`[^\s"']+\.(?:ps1|cmd|bat|sh)\b`)

// imageScript is the script a container's command runs, when it runs one.
func imageScript(c corev1.Container) string {
	return scriptArg.FindString(strings.Join(append(append([]string{}, c.Command...), c.Args...), " "))
}

// Manifests are the DaemonSets and ConfigMaps of a YAML file, such as the manifest a kube-proxy
// DaemonSet was deployed from or `kubectl get ds,cm -o yaml`.
type Manifests struct {
	DaemonSets []*appsv1.DaemonSet
	ConfigMaps []*corev1.ConfigMap
}

// ReadManifests reads every DaemonSet and ConfigMap of a multi-document YAML or JSON stream
// (lists included); other kinds are skipped.
func ReadManifests(r io.Reader) (*Manifests, error) {
	m := &Manifests{}
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return m, nil
		} else if err != nil {
			return nil, err
		}
		if err := m.add(doc); err != nil {
			return nil, err
		}
	}
}

func (m *Manifests) add(doc map[string]any) error {
	data, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	switch doc["kind"] {
	case "List", "DaemonSetList", "ConfigMapList":
		items, _ := doc["items"].([]any)
		for _, item := range items {
			if obj, ok := item.(map[string]any); ok {
				if err := m.add(obj); err != nil {
					return err
				}
			}
		}
	case "DaemonSet":
		ds := &appsv1.DaemonSet{}
		if err := yaml.Unmarshal(data, ds); err != nil {
			return fmt.Errorf("DaemonSet: %w", err)
		}
		m.DaemonSets = append(m.DaemonSets, ds)
	case "ConfigMap":
		cm := &corev1.ConfigMap{}
		if err := yaml.Unmarshal(data, cm); err != nil {
			return fmt.Errorf("ConfigMap: %w", err)
		}
		m.ConfigMaps = append(m.ConfigMaps, cm)
	}
	return nil
}

// ConfigMap finds a ConfigMap of the file; one without a namespace is in every namespace.
func (m *Manifests) ConfigMap(_ context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	for _, cm := range m.ConfigMaps {
		if cm.Name == name && (cm.Namespace == "" || cm.Namespace == namespace) {
			return cm, nil
		}
	}
	return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
}
