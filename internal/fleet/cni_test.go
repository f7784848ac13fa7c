package fleet

import (
	"context"
	"net/netip"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/winproxy/winproxy/agent/hns"
)

func TestSeedHostAndSyncPods(t *testing.T) {
	ctx := context.Background()
	node, _ := Find("win-2022")
	path := filepath.Join(t.TempDir(), "host.json")
	if err := SeedHost(path, node, Nodes); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	var objs []client.Object
	for _, w := range Workloads() {
		if len(w.Pods) > 0 {
			objs = append(objs, w.EndpointSlice())
		}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()

	added, removed, err := SyncPods(ctx, c, path, node)
	if err != nil {
		t.Fatal(err)
	}
	// win-2022 runs web, api, storefront, cart and db pods.
	if added != 5 || removed != 0 {
		t.Errorf("first sync added %d, removed %d; want 5, 0", added, removed)
	}
	if added, removed, _ = SyncPods(ctx, c, path, node); added != 0 || removed != 0 {
		t.Errorf("second sync added %d, removed %d; want nothing", added, removed)
	}

	h, err := OpenHost(path, node)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	n, err := h.GetNetworkByName(ctx, NetworkName)
	if err != nil {
		t.Fatal(err)
	}
	if !n.IsOverlay() || len(n.RemoteSubnetRoutes) != 3 {
		t.Errorf("network = %+v, want overlay with 3 remote subnets", n)
	}
	pod := netip.MustParseAddr("10.244.3.5")
	if !slices.ContainsFunc(n.RemoteSubnetRoutes, func(r hns.RemoteSubnetRoute) bool {
		return r.DestinationPrefix.Contains(pod) && r.ProviderAddress.String() == "172.20.0.13"
	}) {
		t.Errorf("no route to win-2025's pods through 172.20.0.13: %+v", n.RemoteSubnetRoutes)
	}
	ep, err := h.GetEndpointByName(ctx, SourceVIPEndpointName)
	if err != nil || ep.IPs[0].String() != "10.244.2.2" {
		t.Errorf("Calico_ep = %+v, %v; want 10.244.2.2", ep, err)
	}
}
