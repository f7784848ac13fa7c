//go:build !windows

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// userCan asks the shared apiserver whether user may do verb on resource (kubectl auth can-i).
func userCan(t *testing.T, user, verb, resource string) bool {
	t.Helper()
	out, _ := kubectlErr("auth", "can-i", verb, resource, "--as", user)
	return strings.TrimSpace(out) == "yes"
}

// TestHelmUserRoles: the chart's view and edit ClusterRoles carry the aggregation labels of
// Kubernetes' default roles, and grant what they say, as the apiserver's authorizer decides.
func TestHelmUserRoles(t *testing.T) {
	ctx := context.Background()
	_, objs := render(t, "--set", "fullnameOverride=wp-roles")
	aggregated := map[string][]string{
		"wp-roles-view": {"view", "edit", "admin"},
		"wp-roles-edit": {"edit", "admin"},
	}
	for name, into := range aggregated {
		role := find(t, objs, "ClusterRole", name)
		for _, r := range []string{"view", "edit", "admin"} {
			_, has := role.GetLabels()["rbac.authorization.k8s.io/aggregate-to-"+r]
			if want := contains(into, r); has != want {
				t.Errorf("ClusterRole %s aggregated into %s: %t, want %t", name, r, has, want)
			}
		}
		var obj rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(role.Object, &obj); err != nil {
			t.Fatal(err)
		}
		obj.ResourceVersion = ""
		if err := env.Client.Create(ctx, &obj); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: name + "-user"}},
		}
		if err := env.Client.Create(ctx, binding); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.Client.Delete(ctx, binding)
			_ = env.Client.Delete(ctx, &obj)
		})
	}
	for _, tc := range []struct {
		user, verb, resource string
		want                 bool
	}{
		{"wp-roles-view-user", "list", "windowsproxyconfigs.winproxy.io", true},
		{"wp-roles-view-user", "get", "windowsproxynodes.winproxy.io", true},
		{"wp-roles-view-user", "create", "windowsproxyconfigs.winproxy.io", false},
		{"wp-roles-edit-user", "create", "windowsproxyconfigs.winproxy.io", true},
		{"wp-roles-edit-user", "delete", "windowsproxyconfigs.winproxy.io", true},
		// People never write a WindowsProxyNode: the controller and the agents do.
		{"wp-roles-edit-user", "update", "windowsproxynodes.winproxy.io", false},
		{"wp-roles-edit-user", "patch", "windowsproxynodes.winproxy.io/status", false},
	} {
		if got := userCan(t, tc.user, tc.verb, tc.resource); got != tc.want {
			t.Errorf("%s can %s %s: %t, want %t", tc.user, tc.verb, tc.resource, got, tc.want)
		}
	}

	_, objs = render(t, "--set", "fullnameOverride=wp-roles", "--set", "userRoles.enabled=false")
	for _, r := range ofKind(objs, "ClusterRole") {
		if _, ok := aggregated[r.GetName()]; ok {
			t.Errorf("userRoles.enabled=false still renders ClusterRole %s", r.GetName())
		}
	}
}

// TestHelmNetworkPolicy: opt-in, it selects the controller pods and lets in only the metrics
// (from the given peers) and probe ports, and out only the API server ports; the apiserver
// accepts it.
func TestHelmNetworkPolicy(t *testing.T) {
	if _, objs := render(t); len(ofKind(objs, "NetworkPolicy")) != 0 {
		t.Error("a NetworkPolicy is rendered by default; it is opt-in")
	}
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(`
networkPolicy:
  enabled: true
  metricsFrom:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}
  apiServerTo:
    - ipBlock: {cidr: 10.0.0.0/28}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	manifest, objs := render(t, "-f", values)
	np := find(t, objs, "NetworkPolicy", "-controller")
	deploy := find(t, objs, "Deployment", "-controller")
	podLabels, _, _ := unstructured.NestedStringMap(deploy.Object, "spec", "template", "metadata", "labels")
	selector, _, _ := unstructured.NestedStringMap(np.Object, "spec", "podSelector", "matchLabels")
	if len(selector) == 0 {
		t.Fatal("the NetworkPolicy selects every pod of the namespace")
	}
	for k, v := range selector {
		if podLabels[k] != v {
			t.Errorf("the NetworkPolicy selects %s=%s, which the controller pods do not carry (%v)", k, v, podLabels)
		}
	}
	checkEqual(t, "ingress", nested(t, np.Object, "spec", "ingress"), []any{
		map[string]any{"ports": []any{map[string]any{"protocol": "TCP", "port": 8443}},
			"from": []any{map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}}}}},
		map[string]any{"ports": []any{map[string]any{"protocol": "TCP", "port": 8081}}},
	})
	checkEqual(t, "egress", nested(t, np.Object, "spec", "egress"), []any{
		map[string]any{"ports": []any{map[string]any{"protocol": "TCP", "port": 443}, map[string]any{"protocol": "TCP", "port": 6443}},
			"to": []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/28"}}}},
	})
	acceptedByAPIServer(t, manifest)
}

// TestHelmExtraObjects: objects and strings, each rendered as a template, installed with the
// release.
func TestHelmExtraObjects(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(`
extraObjects:
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: '{{ include "winproxy.fullname" . }}-extra'
    data:
      release: '{{ .Release.Name }}'
  - |
    apiVersion: scheduling.k8s.io/v1
    kind: PriorityClass
    metadata:
      name: {{ .Release.Name }}-critical
    value: 1000000
`), 0o600); err != nil {
		t.Fatal(err)
	}
	manifest, objs := render(t, "-f", values)
	cm := find(t, objs, "ConfigMap", "wpv-winproxy-extra")
	checkEqual(t, "extra ConfigMap data", cm.Object["data"], map[string]any{"release": "wpv"})
	find(t, objs, "PriorityClass", "wpv-critical")
	acceptedByAPIServer(t, manifest)
}
