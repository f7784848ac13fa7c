package hnsrpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/winproxy/winproxy/agent/hns"
)

// Server serves an hns.Client on a loopback address until Close.
type Server struct {
	l    net.Listener
	srv  *http.Server
	done chan struct{}
}

// Serve listens on addr, a loopback IP and port (port 0 picks a free one, see Addr), and serves c
// there until Close.
func Serve(addr string, c hns.Client) (*Server, error) {
	if err := checkLoopback(addr); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{l: l, srv: &http.Server{Handler: NewHandler(c), ReadHeaderTimeout: time.Minute}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(l) // ErrServerClosed after Close; any other error ends serving the same way
	}()
	return s, nil
}

// Addr is the address the server listens on, for a Client or --hns-sim-address.
func (s *Server) Addr() string { return s.l.Addr().String() }

// Close stops serving. Calls in progress lose their connection, which cancels their context.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.done
	return err
}

// path is the endpoint of one Client method.
func path(op hns.Op) string { return "/v1/" + string(op) }

// method is one Client method, its arguments taken from a request.
type method func(ctx context.Context, r request) (any, error)

// answer turns a method's two results into method's.
func answer[T any](v T, err error) (any, error) { return v, err }

func methods(c hns.Client) map[hns.Op]method {
	return map[hns.Op]method{
		hns.OpVersion:          func(ctx context.Context, _ request) (any, error) { return answer(c.Version(ctx)) },
		hns.OpGetNetworkByName: func(ctx context.Context, r request) (any, error) { return answer(c.GetNetworkByName(ctx, r.Name)) },
		hns.OpListEndpoints:    func(ctx context.Context, r request) (any, error) { return answer(c.ListEndpoints(ctx, r.NetworkID)) },
		hns.OpGetEndpointByName: func(ctx context.Context, r request) (any, error) {
			return answer(c.GetEndpointByName(ctx, r.Name))
		},
		hns.OpCreateEndpoint: func(ctx context.Context, r request) (any, error) {
			return answer(c.CreateEndpoint(ctx, r.NetworkID, deref(r.Endpoint)))
		},
		hns.OpDeleteEndpoint:    func(ctx context.Context, r request) (any, error) { return nil, c.DeleteEndpoint(ctx, r.ID) },
		hns.OpListLoadBalancers: func(ctx context.Context, _ request) (any, error) { return answer(c.ListLoadBalancers(ctx)) },
		hns.OpListEndpointIDs:   func(ctx context.Context, r request) (any, error) { return answer(c.ListEndpointIDs(ctx, r.NetworkID)) },
		hns.OpListLoadBalancerIDs: func(ctx context.Context, _ request) (any, error) {
			return answer(c.ListLoadBalancerIDs(ctx))
		},
		hns.OpGetLoadBalancer: func(ctx context.Context, r request) (any, error) { return answer(c.GetLoadBalancer(ctx, r.ID)) },
		hns.OpCreateLoadBalancer: func(ctx context.Context, r request) (any, error) {
			return answer(c.CreateLoadBalancer(ctx, deref(r.LoadBalancer)))
		},
		hns.OpModifyLoadBalancer: func(ctx context.Context, r request) (any, error) {
			return answer(c.ModifyLoadBalancer(ctx, r.ID, deref(r.LoadBalancer)))
		},
		hns.OpDeleteLoadBalancer: func(ctx context.Context, r request) (any, error) { return nil, c.DeleteLoadBalancer(ctx, r.ID) },
	}
}

// deref is *p, or the zero T for nil.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// NewHandler exposes c over HTTP: POST /v1/<hns.Op> with the method's arguments as a JSON object
// answers 200 and the result as JSON (an ID list as the JSON array of its IDs, a delete nothing),
// or 500 and the error as JSON; a request it cannot read is a 400 with text.
func NewHandler(c hns.Client) http.Handler {
	mux := http.NewServeMux()
	for op, m := range methods(c) {
		mux.HandleFunc("POST "+path(op), func(w http.ResponseWriter, r *http.Request) { serve(w, r, m) })
	}
	return mux
}

func serve(w http.ResponseWriter, r *http.Request, m method) {
	// The body is read to its end before the call: from then on the server watches the
	// connection, and a client that goes away cancels the call's context.
	body, err := io.ReadAll(r.Body)
	var req request
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, "hnsrpc: reading the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	v, err := m(r.Context(), req)
	status := http.StatusOK
	var out []byte
	if err == nil {
		out, err = encodeAnswer(v)
	}
	if err != nil {
		status = http.StatusInternalServerError
		out, _ = json.Marshal(encodeError(err)) // a wireError holds strings and numbers only: it encodes
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

// encodeAnswer is a method's result as JSON; an ID list is the text of its IDs.
func encodeAnswer(v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case hns.IDList:
		return idListText(v), nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, errors.New("hnsrpc: encoding the answer: " + err.Error())
	}
	return out, nil
}

// idListText is the JSON array of l's IDs. Every ID of an IDList is a GUID (hns.ParseIDList), whose
// text needs no escaping.
func idListText(l hns.IDList) []byte {
	out := make([]byte, 0, 2+l.Len()*len(`"00000000-0000-0000-0000-000000000000",`))
	out = append(out, '[')
	for id := range l.All() {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(append(out, '"'), id...), '"')
	}
	return append(out, ']')
}
