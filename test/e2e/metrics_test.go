//go:build !windows

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winproxy/winproxy/internal/fleet"
	"github.com/winproxy/winproxy/internal/testenv"
)

// The controller's metrics answer only tokens the apiserver authorizes for GET /metrics, over
// HTTPS, as kubebuilder v4 operators do: 200 with a token bound to the metrics-reader role, 403
// with another valid token, 401 without one.
func TestControllerMetricsAreSecured(t *testing.T) {
	ctx := context.Background()
	// A control plane of its own: this controller must not compete with the system test's.
	e, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	dir := t.TempDir()
	binDir := filepath.Join(dir, "bin")
	if err := fleet.Build(ctx, env.RepoRoot, binDir); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctrl := testenv.StartController(t, binDir, e.Kubeconfig, dir, "--metrics-bind-address", addr)

	reader := find(t, readObjects(t, kustomizeRender), "ClusterRole", "winproxy-metrics-reader")
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "winproxy-metrics-reader"}, Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	if got, _, _ := unstructuredRules(reader); got != "/metrics:get" {
		t.Fatalf("the metrics-reader ClusterRole of %s grants %q, want GET /metrics", kustomizeRender, got)
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "prometheus"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "someone"}},
		role,
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "prometheus-winproxy-metrics"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "monitoring", Name: "prometheus"}},
		},
	}
	for _, o := range objs {
		if err := e.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	token := func(sa string) string {
		cs, err := kubernetes.NewForConfig(e.Config)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := cs.CoreV1().ServiceAccounts("monitoring").CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tok.Status.Token
	}
	// The certificate is self-signed: this test checks who may read, not the certificate.
	httpc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	scrape := func(tok string) (int, string, error) {
		req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := httpc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), nil
	}
	prometheus, someone := token("prometheus"), token("someone")
	testenv.Eventually(t, 60*time.Second, func() error {
		code, body, err := scrape(prometheus)
		if err != nil || code != 200 || !strings.Contains(body, "winproxy_build_info{") {
			return fmt.Errorf("scrape with the metrics-reader's token: %d %w\n%s", code, err, ctrl.Tail(5))
		}
		return nil
	})
	if code, _, err := scrape(someone); code != http.StatusForbidden {
		t.Errorf("a token without the metrics-reader role: %d %v, want 403", code, err)
	}
	if code, _, err := scrape(""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d %v, want 401", code, err)
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	if resp, err := plain.Get("http://" + addr + "/metrics"); err == nil && resp.StatusCode == 200 {
		resp.Body.Close()
		t.Error("the metrics answer plain HTTP")
	}
}

// unstructuredRules renders a ClusterRole's non-resource rules as "url:verb".
func unstructuredRules(o interface{ UnstructuredContent() map[string]any }) (string, bool, error) {
	rules, _ := o.UnstructuredContent()["rules"].([]any)
	var out []string
	for _, r := range rules {
		m := r.(map[string]any)
		urls, _ := m["nonResourceURLs"].([]any)
		verbs, _ := m["verbs"].([]any)
		for _, u := range urls {
			for _, v := range verbs {
				out = append(out, fmt.Sprint(u)+":"+fmt.Sprint(v))
			}
		}
	}
	return strings.Join(out, ","), len(out) > 0, nil
}
