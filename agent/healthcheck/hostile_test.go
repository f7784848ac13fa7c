package healthcheck

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// healthHeapBound is how much the heap may grow while hostileClients connections each send
// hostileHeader bytes of headers to a health port: a few KiB are read of each before it is
// refused. Before the bound, net/http read up to 1 MiB of each: over 200 MB here.
const (
	hostileClients  = 200
	hostileHeader   = 1 << 20
	healthHeapBound = 32 << 20
	honestRequests  = 20
	// honestTimeout is generous: the test runs beside other jobs on two cores, under the race
	// detector too; what it checks is that probes are answered, not how fast.
	honestTimeout = 30 * time.Second
)

// Many connections sending oversized headers to a health port cost the agent a bounded heap,
// and a load balancer probing meanwhile is still answered, every time.
func TestHealthPortBoundsHostileHeaders(t *testing.T) {
	srv := NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "{}") }))
	addr := freeAddr(t)
	if err := srv.Serve(addr); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	base := heapAlloc()
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if h := int64(m.HeapAlloc); h > peak.Load() {
				peak.Store(h)
			}
		}
	}()
	// One header line of hostileHeader bytes, shared by every client: the test's own heap stays flat.
	header := append([]byte("GET /healthz HTTP/1.1\r\nHost: node\r\nX-Junk: "), bytes.Repeat([]byte("a"), hostileHeader)...)
	var wg sync.WaitGroup
	for range hostileClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			_, _ = c.Write(header) // the server stops reading long before the end
			_, _ = io.Copy(io.Discard, c)
		}()
	}
	client := &http.Client{Timeout: honestTimeout}
	var slowest time.Duration
	for i := range honestRequests {
		start := time.Now()
		resp, err := client.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatalf("probe %d during the attack: %v", i, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("probe %d during the attack: %s", i, resp.Status)
		}
		slowest = max(slowest, time.Since(start))
	}
	wg.Wait()
	close(stop)
	<-sampled
	grew := peak.Load() - base
	if grew > healthHeapBound {
		t.Errorf("the heap grew by %d MiB under %d connections of %d KiB headers, want at most %d MiB", grew>>20, hostileClients, hostileHeader>>10, healthHeapBound>>20)
	}
	t.Logf("%d connections each sending %d KiB of headers: heap peak +%d MiB (bound %d MiB), %d of %d probes answered meanwhile, the slowest in %v",
		hostileClients, hostileHeader>>10, max(grew, 0)>>20, healthHeapBound>>20, honestRequests, honestRequests, slowest.Round(time.Millisecond))
}

func heapAlloc() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
