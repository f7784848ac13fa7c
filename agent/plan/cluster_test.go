package plan

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/winproxy/winproxy/agent/selectors"
	"github.com/winproxy/winproxy/api/v1alpha1"
)

// selectingReader passes lists to the fake client, which cannot evaluate a field selector other
// than equality: it records the field selectors asked for and applies the Services' one itself.
type selectingReader struct {
	client.Reader
	fieldSelectors map[string]string
}

func (r *selectingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	if lo.FieldSelector != nil {
		r.fieldSelectors[fmt.Sprintf("%T", list)] = lo.FieldSelector.String()
		lo.FieldSelector = nil
	}
	if err := r.Reader.List(ctx, list, lo); err != nil {
		return err
	}
	if s, ok := list.(*corev1.ServiceList); ok {
		kept := s.Items[:0]
		for _, svc := range s.Items {
			if svc.Spec.ClusterIP != corev1.ClusterIPNone {
				kept = append(kept, svc)
			}
		}
		s.Items = kept
	}
	return nil
}

// cluster is a small overlay cluster: win-1 (Windows Server 2022, whose agent reported its host)
// and linux-1, a Service with a pod on each, and the objects kube-proxy skips.
func cluster(t *testing.T, withWPN bool) *selectingReader {
	t.Helper()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	node := func(name, ip, cidr, kernel string, labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr}},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}},
				NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.34.1", KernelVersion: kernel}}}
	}
	service := func(name, clusterIP string, labels map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: labels},
			Spec: corev1.ServiceSpec{ClusterIP: clusterIP, ClusterIPs: []string{clusterIP},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
	}
	slice := func(name string, labels map[string]string, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: labels},
			AddressType: discoveryv1.AddressTypeIPv4, Endpoints: eps,
			Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}}}
	}
	endpoint := func(ip, node, pod string) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{ip}, NodeName: ptr.To(node), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: pod}}
	}
	objs := []client.Object{
		node("win-1", "10.0.0.11", "10.244.1.0/24", "10.0.20348.2227", map[string]string{"winproxy.io/cni": "calico"}),
		node("linux-1", "10.0.0.13", "10.244.3.0/24", "6.1.0", nil),
		service("web", "10.96.10.10", nil),
		service("mesh", "10.96.20.20", map[string]string{selectors.ServiceProxyNameLabel: "other-proxy"}),
		service("db", corev1.ClusterIPNone, nil),
		slice("web-abc", map[string]string{discoveryv1.LabelServiceName: "web"},
			endpoint("10.244.1.10", "win-1", "web-1"), endpoint("10.244.3.30", "linux-1", "web-2")),
		slice("db-abc", map[string]string{discoveryv1.LabelServiceName: "db", corev1.IsHeadlessService: ""},
			endpoint("10.244.1.11", "win-1", "db-1")),
	}
	if withWPN {
		objs = append(objs, &v1alpha1.WindowsProxyNode{
			ObjectMeta: metav1.ObjectMeta{Name: "win-1"},
			Spec: v1alpha1.WindowsProxyNodeSpec{ConfigName: "calico", Hash: "h", Proxy: v1alpha1.ResolvedProxyConfig{
				Network:   v1alpha1.NetworkSpec{Name: "Calico", Type: v1alpha1.NetworkTypeOverlay},
				EnableDSR: true, SourceVIP: &v1alpha1.ResolvedSourceVIP{Strategy: v1alpha1.SourceVIPStrategyEndpoint, EndpointName: "Calico_ep"},
				KubernetesVersion: "1.34",
			}},
			Status: v1alpha1.WindowsProxyNodeStatus{
				HNS:       v1alpha1.HNSStatus{Version: "13.3"},
				Network:   v1alpha1.NetworkStatus{Name: "Calico", ID: "NET-CALICO", Type: "Overlay"},
				SourceVIP: v1alpha1.SourceVIPStatus{Address: "10.244.1.2", Origin: v1alpha1.SourceVIPOriginEndpoint},
			},
		})
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&v1alpha1.WindowsProxyNode{}).Build()
	return &selectingReader{Reader: c, fieldSelectors: map[string]string{}}
}

func TestFromClusterReadsWhatTheAgentReads(t *testing.T) {
	c := cluster(t, true)
	f := &File{}
	if err := FromCluster(context.Background(), c, "win-1", f); err != nil {
		t.Fatal(err)
	}
	if got := c.fieldSelectors["*v1.ServiceList"]; got != "spec.clusterIP!=None" {
		t.Errorf("Services listed with field selector %q, want spec.clusterIP!=None", got)
	}
	if f.WindowsProxyNode == nil || f.WindowsProxyNode.Spec.ConfigName != "calico" {
		t.Fatalf("the node's WindowsProxyNode was not read: %+v", f.WindowsProxyNode)
	}
	var services, slices []string
	for _, s := range f.Services {
		services = append(services, s.Name)
	}
	for _, s := range f.EndpointSlices {
		slices = append(slices, s.Name)
	}
	if strings.Join(services, ",") != "web" || strings.Join(slices, ",") != "web-abc" {
		t.Errorf("services %v, slices %v; want only web's: kube-proxy skips another proxy's and headless ones", services, slices)
	}
	h := f.HNS
	if h.Version != "13.3" || h.Network == nil || h.Network.ID != "NET-CALICO" || h.HostMAC != assumedHostMAC ||
		len(h.Network.RemoteSubnets) != 1 || h.Network.RemoteSubnets[0] != (RemoteSubnet{DestinationPrefix: "10.244.3.0/24", ProviderAddress: "10.0.0.13"}) {
		t.Errorf("assumed host = %+v, network %+v", h, h.Network)
	}
	if len(h.Endpoints) != 2 || h.Endpoints[0].Name != "web-1" || h.Endpoints[1].Name != "Calico_ep" || h.Endpoints[1].IPs[0] != "10.244.1.2" {
		t.Errorf("assumed endpoints = %+v, want the local pod and Calico_ep", h.Endpoints)
	}

	p, err := Build(f)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Status.Programmable || !p.Status.DSR.Active || p.Status.SourceVIP.Address != "10.244.1.2" || len(p.LoadBalancers) != 1 {
		t.Errorf("plan status %+v, %d load balancers; want DSR active, source VIP 10.244.1.2, one LB", p.Status, len(p.LoadBalancers))
	}
	if len(p.Assumptions) != 1 || !strings.Contains(p.Assumptions[0], "host MAC unknown") {
		t.Errorf("assumptions = %q", p.Assumptions)
	}
}

func TestFromClusterWithoutWindowsProxyNode(t *testing.T) {
	err := FromCluster(context.Background(), cluster(t, false), "win-1", &File{})
	if err == nil || !strings.Contains(err.Error(), `node "win-1" has no WindowsProxyNode`) {
		t.Errorf("err = %v", err)
	}
	if err := FromCluster(context.Background(), cluster(t, true), "win-1", &File{Services: []corev1.Service{{}}}); err == nil {
		t.Error("services in the file accepted beside a cluster")
	}
}

// TestSampleConfigOnALiveNode previews config/samples/calico-overlay-dsr.yaml, as it is, on a
// node of the cluster: the cluster's Node resolves it.
func TestSampleConfigOnALiveNode(t *testing.T) {
	data, err := os.ReadFile("../../config/samples/calico-overlay-dsr.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if f.WindowsProxyConfig == nil || f.WindowsProxyConfig.Name != "calico-overlay-dsr" {
		t.Fatalf("the sample parsed as %+v", f)
	}
	if err := FromCluster(context.Background(), cluster(t, false), "win-1", f); err != nil {
		t.Fatal(err)
	}
	if f.HNS.Version != "13.3" { // from the node's Windows build: 20348 is Windows Server 2022
		t.Errorf("assumed HNS %q, want 13.3", f.HNS.Version)
	}
	p, err := Build(f)
	if err != nil {
		t.Fatal(err)
	}
	// Without a report, Calico_ep's address is unknown: the agent would wait for the endpoint.
	if p.Status.Programmable || conditionOf(p.Status, v1alpha1.ConditionProgrammed).Reason != v1alpha1.ReasonSourceVIPEndpointMissing {
		t.Errorf("status = %+v", p.Status)
	}
	if _, err := Parse([]byte("apiVersion: v1\nkind: Service\nmetadata: {name: web}\n")); err == nil {
		t.Error("a Service accepted as plan input")
	}
}
