package healthcheck

import (
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Want is what one Service needs from its service health server.
type Want struct {
	// Port is the Service's spec.healthCheckNodePort.
	Port uint16
	// LocalEndpoints is the number of ready endpoints of the Service on this node, counted by IP.
	LocalEndpoints int
}

// Failure is a service health server that could not listen.
type Failure struct {
	// Service is "namespace/name".
	Service string
	Port    uint16
	Err     error
}

// Services runs one service health server per Service with a healthCheckNodePort. A load balancer
// probes it on every node: 200 with the local endpoint count when this node has ready endpoints for
// the Service and its proxy is healthy, 503 otherwise, so that externalTrafficPolicy: Local traffic
// only goes to nodes that can serve it.
type Services struct {
	host    string
	healthy func() bool

	mu      sync.RWMutex
	servers map[string]*serviceServer
	// pending are the wanted servers that do not listen yet (new, moved, or failed to listen),
	// tried on every Update.
	pending map[string]Want
}

type serviceServer struct {
	port      uint16
	srv       *http.Server
	endpoints int
}

// NewServices returns service health servers that listen on host ("" for every address of the
// node, as kube-proxy on Windows does) and report healthy() as serviceProxyHealthy.
func NewServices(host string, healthy func() bool) *Services {
	return &Services{host: host, healthy: healthy, servers: map[string]*serviceServer{}, pending: map[string]Want{}}
}

// Update applies changes, by "namespace/name": a Service's new Want, or nil for one that needs
// no health server any more. It opens a listener for a new Service, moves one whose port changed,
// closes one no longer wanted and updates the endpoint counts. A listener that fails is returned,
// and tried again on every Update until it listens or is no longer wanted; the others are
// unaffected. Only the changes are read: an event's sync passes the checks it touched, not every
// Service with a health check.
func (s *Services) Update(changes map[string]*Want) []Failure {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, w := range changes {
		srv, listening := s.servers[name]
		switch {
		case w == nil:
			delete(s.pending, name)
		case listening && srv.port == w.Port:
			srv.endpoints = w.LocalEndpoints
			continue
		default:
			s.pending[name] = *w
		}
		if listening {
			_ = srv.srv.Close()
			delete(s.servers, name)
		}
	}
	var failed []Failure
	for _, name := range slices.Sorted(maps.Keys(s.pending)) {
		w := s.pending[name]
		srv, err := listenAndServe(net.JoinHostPort(s.host, strconv.Itoa(int(w.Port))), s.handler(name))
		if err != nil {
			failed = append(failed, Failure{Service: name, Port: w.Port, Err: err})
			continue
		}
		delete(s.pending, name)
		s.servers[name] = &serviceServer{port: w.Port, srv: srv, endpoints: w.LocalEndpoints}
	}
	return failed
}

// Listening is the number of service health servers that listen.
func (s *Services) Listening() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.servers)
}

// Close stops every service health server.
func (s *Services) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, srv := range s.servers {
		_ = srv.srv.Close()
		delete(s.servers, name)
	}
	clear(s.pending)
}

// serviceReport is the JSON body of a service health check; its fields are kube-proxy's.
type serviceReport struct {
	Service struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"service"`
	LocalEndpoints      int  `json:"localEndpoints"`
	ServiceProxyHealthy bool `json:"serviceProxyHealthy"`
}

func (s *Services) handler(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.mu.RLock()
		srv, ok := s.servers[name]
		count := 0
		if ok {
			count = srv.endpoints
		}
		s.mu.RUnlock()
		var r serviceReport
		r.Service.Namespace, r.Service.Name, _ = strings.Cut(name, "/")
		r.LocalEndpoints, r.ServiceProxyHealthy = count, s.healthy()
		code := http.StatusServiceUnavailable
		if count > 0 && r.ServiceProxyHealthy {
			code = http.StatusOK
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		// Load balancers that weigh nodes (e.g. Azure's) read the local endpoint count here.
		w.Header().Set("X-Load-Balancing-Endpoint-Weight", strconv.Itoa(count))
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(r)
	})
}
