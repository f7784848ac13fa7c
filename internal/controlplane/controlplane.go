//go:build !windows

// Package controlplane starts a real control plane on loopback (etcd and kube-apiserver, via
// controller-runtime's envtest) with winproxy's CRDs installed: the one `make demo` shows winproxy
// on, and the one integration and end-to-end tests share (through internal/testenv, which adds
// what only tests need). It is shared infrastructure, not a test helper, so the demo depends on it
// and not on the tests' package.
//
// The binaries come from KUBEBUILDER_ASSETS, which `make test` points at bin/k8s/<version> after
// building them from source. When it is unset (a test run from an IDE, the demo), the newest
// bin/k8s/<version> of the repository is used. A missing control plane is an error: a test that
// needs one fails, it is never skipped.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	winproxyv1alpha1 "github.com/winproxy/winproxy/api/v1alpha1"
)

// Env is a running control plane.
type Env struct {
	// Config reaches the apiserver as an administrator.
	Config *rest.Config
	// Client is a controller-runtime client with winproxy's and Kubernetes' types.
	Client client.Client
	// Scheme holds winproxy's and Kubernetes' types.
	Scheme *k8sruntime.Scheme
	// Kubeconfig is a kubeconfig file for the administrator, for kubectl and helm.
	Kubeconfig string
	// BinDir holds kube-apiserver, etcd and (when built) kubectl.
	BinDir string
	// RepoRoot is the repository's root directory.
	RepoRoot string

	env *envtest.Environment
	dir string
	// restarted are kube-apiservers started again by RestartAPIServer.
	restarted []*exec.Cmd
}

// Option changes what Start sets up.
type Option func(*options)

type options struct {
	withoutCRDs    bool
	apiServerFlags [][2]string
}

// WithoutCRDs leaves winproxy's CRDs out, for tests that install them the way users do (Helm,
// kustomize).
func WithoutCRDs() Option {
	return func(o *options) { o.withoutCRDs = true }
}

// WithAPIServerFlag sets a kube-apiserver flag, e.g. endpoint-reconciler-type=none for a cluster
// whose API server does not publish its own address in the EndpointSlice default/kubernetes.
func WithAPIServerFlag(name, value string) Option {
	return func(o *options) { o.apiServerFlags = append(o.apiServerFlags, [2]string{name, value}) }
}

// Start starts etcd and kube-apiserver with the CRDs from config/crd/bases (unless WithoutCRDs)
// and returns once the API server has published itself in default/kubernetes, as on a cluster in
// service (unless its endpoint reconciler is off).
// Call Stop when done, also after a failed Start's partial start (Start stops what it started on
// error).
func Start(opts ...Option) (*Env, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	binDir, err := binaryDir(root)
	if err != nil {
		return nil, err
	}
	scheme := k8sruntime.NewScheme()
	for _, add := range []func(*k8sruntime.Scheme) error{clientgoscheme.AddToScheme, winproxyv1alpha1.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: binDir,
		Scheme:                scheme,
	}
	if o.withoutCRDs {
		env.CRDDirectoryPaths, env.ErrorIfCRDPathMissing = nil, false
	}
	// The tests, the demo and the chaos runs give their Services fixed ClusterIPs in 10.0.0.0/24
	// (fleet.Workloads' 10.0.0.100-105, the chaos model's 10.0.0.10+), while the chart's and
	// other Services get theirs allocated. In envtest's default range, 10.0.0.0/24, the addresses
	// allocated at random are all but the first 16, so one in ~250 runs an allocated Service took
	// 10.0.0.100 first and every later "web" was refused. In a /16 the first 256 addresses are the
	// range's static band (KEP-3070), which allocation leaves to fixed ClusterIPs.
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.0.0.0/16")
	for _, f := range o.apiServerFlags {
		env.ControlPlane.GetAPIServer().Configure().Set(f[0], f[1])
	}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("starting the control plane from %s: %w", binDir, err)
	}
	e := &Env{Config: cfg, Scheme: scheme, BinDir: binDir, RepoRoot: root, env: env}
	if e.Client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		e.Stop()
		return nil, err
	}
	if !slices.Contains(o.apiServerFlags, [2]string{"endpoint-reconciler-type", "none"}) {
		if err := e.awaitSelfPublished(); err != nil {
			e.Stop()
			return nil, err
		}
	}
	if e.dir, err = os.MkdirTemp("", "winproxy-controlplane-"); err != nil {
		e.Stop()
		return nil, err
	}
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		e.Stop()
		return nil, err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		e.Stop()
		return nil, err
	}
	e.Kubeconfig = filepath.Join(e.dir, "kubeconfig")
	if err := os.WriteFile(e.Kubeconfig, kubeconfig, 0o600); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

// Stop stops the control plane and removes temporary files.
func (e *Env) Stop() {
	for _, c := range e.restarted {
		_ = c.Process.Kill()
	}
	if e.env != nil {
		_ = e.env.Stop()
	}
	if e.dir != "" {
		_ = os.RemoveAll(e.dir)
	}
}

// Kubectl returns the path of the kubectl built beside the apiserver.
func (e *Env) Kubectl() (string, error) {
	p := filepath.Join(e.BinDir, "kubectl")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("kubectl not found in %s (run 'make k8s-tools'): %w", e.BinDir, err)
	}
	return p, nil
}

// RepoRoot finds the repository root from this source file's location.
func RepoRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate the controlplane source file")
	}
	root := filepath.Join(filepath.Dir(file), "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("repository root not found from %s: %w", file, err)
	}
	return filepath.Abs(root)
}

// binaryDir is KUBEBUILDER_ASSETS, or else the newest bin/k8s/<version> that holds kube-apiserver.
func binaryDir(root string) (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	found, _ := filepath.Glob(filepath.Join(root, "bin", "k8s", "*", "kube-apiserver"))
	if len(found) == 0 {
		return "", errors.New("no control plane: set KUBEBUILDER_ASSETS or run 'make k8s-tools' to build kube-apiserver and etcd into bin/k8s")
	}
	sort.Strings(found)
	return filepath.Dir(found[len(found)-1]), nil
}

// RestartAPIServer kills kube-apiserver (SIGKILL, like a crashed or upgraded control-plane node)
// and starts it again with the same command line, so it serves the same address with the same
// certificates; etcd, and so every object, is kept. It returns once the apiserver is ready again.
func (e *Env) RestartAPIServer() error {
	pid, args, err := e.apiServerProcess()
	if err != nil {
		return err
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	if err := proc.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing kube-apiserver: %w", err)
	}
	if err := waitGone(pid); err != nil {
		return err
	}
	// The kernel can take a moment to release the killed server's port: retry while the new one
	// exits at start.
	deadline := time.Now().Add(30 * time.Second)
	for attempt := 0; ; attempt++ {
		logPath := filepath.Join(e.dir, fmt.Sprintf("kube-apiserver-restart-%d-%d.log", len(e.restarted), attempt))
		cmd, exited, err := startLogged(args, logPath)
		if err != nil {
			return err
		}
		if err := e.waitReady(exited); err == nil {
			e.restarted = append(e.restarted, cmd)
			return nil
		} else if !errors.Is(err, errExited) || time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			out, _ := os.ReadFile(logPath)
			return fmt.Errorf("%w\n%s", err, tail(string(out), 20))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

var errExited = errors.New("kube-apiserver exited")

// startLogged starts a command with its output in a log file; exited is closed when it ends.
func startLogged(args []string, logPath string) (*exec.Cmd, chan struct{}, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, nil, fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(exited)
	}()
	return cmd, exited, nil
}

func tail(s string, lines int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// apiServerProcess finds this environment's kube-apiserver by its binary and serving address.
func (e *Env) apiServerProcess() (int, []string, error) {
	bin := filepath.Join(e.BinDir, "kube-apiserver")
	u, err := url.Parse(e.Config.Host)
	if err != nil {
		return 0, nil, err
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err != nil || len(data) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		if args[0] != bin || !slices.ContainsFunc(args, func(a string) bool { return strings.HasSuffix(a, "--secure-port="+u.Port()) }) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil {
			continue
		}
		return pid, args, nil
	}
	return 0, nil, fmt.Errorf("no kube-apiserver process serving %s", e.Config.Host)
}

func waitGone(pid int) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		// A zombie ("Z") of a process we do not reap is gone for our purposes.
		if err != nil || strings.Contains(string(data), ") Z ") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver (pid %d) did not exit", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// awaitSelfPublished waits for the EndpointSlice default/kubernetes, in which the API server
// publishes its own address. On a real cluster it was written long before anyone installs
// winproxy, and the chart reads it; envtest reports the server ready a moment before its endpoint
// reconciler writes it (CI once installed the chart in that moment).
func (e *Env) awaitSelfPublished() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var slice discoveryv1.EndpointSlice
	for {
		err := e.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, &slice)
		if err == nil {
			if len(slice.Endpoints) > 0 {
				return nil
			}
			err = errors.New("it lists no endpoint")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the API server did not publish itself in the EndpointSlice default/kubernetes: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitReady polls /readyz until the apiserver answers ok, or exited is closed.
func (e *Env) waitReady(exited <-chan struct{}) error {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		if err == nil && string(body) == "ok" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver not ready after a restart: %w", err)
		}
		select {
		case <-exited:
			return errExited
		case <-time.After(100 * time.Millisecond):
		}
	}
}
