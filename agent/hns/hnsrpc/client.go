package hnsrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/winproxy/winproxy/agent/hns"
)

// Client is an hns.Client whose calls are served by another process (Serve). It keeps its
// connections open between calls, as the agent calls HNS thousands of times in a sync.
type Client struct {
	path  string
	conns pool
}

var _ hns.Client = (*Client)(nil)

// NewClient calls the server at the Unix socket path. It connects on the first call.
func NewClient(path string) (*Client, error) {
	if err := checkSocketPath(path); err != nil {
		return nil, err
	}
	return &Client{path: path, conns: pool{path: path}}, nil
}

// Close closes the client's idle connections.
func (c *Client) Close() { c.conns.close() }

// call sends one call and returns the answer's text.
func (c *Client) call(ctx context.Context, op hns.Op, id string, args request) ([]byte, error) {
	body, err := json.Marshal(args)
	switch {
	case err != nil:
		return nil, &hns.Error{Op: op, ID: id, Err: err}
	case len(body) > maxRequest:
		// Refused here, as the server would: a frame's length could not even say it.
		return nil, &hns.Error{Op: op, ID: id, Err: fmt.Errorf("a request of %d bytes, over the %d allowed", len(body), maxRequest)}
	}
	kind, text, err := c.conns.exchange(ctx, op, body)
	switch {
	case err != nil:
		return nil, c.failed(ctx, op, id, err)
	case kind == answerResult:
		return text, nil
	case kind == answerError:
		var w wireError
		if json.Unmarshal(text, &w) == nil {
			return nil, w.decode()
		}
		return nil, &hns.Error{Op: op, ID: id, Err: fmt.Errorf("the HNS service at %s answered an error that cannot be read: %s", c.path, quote(text))}
	}
	return nil, &hns.Error{Op: op, ID: id, Err: fmt.Errorf("the HNS service at %s answered a frame of unknown kind %d: %s", c.path, kind, quote(text))}
}

// quote is the start of an answer's text, for an error.
func quote(text []byte) string {
	const most = 200
	if len(text) > most {
		text = append(text[:most:most], "…"...)
	}
	return strings.TrimSpace(string(text))
}

// failed is the error of a call whose exchange failed: the context's when it ended, an answer
// that began and cannot be read, else unreachable.
func (c *Client) failed(ctx context.Context, op hns.Op, id string, err error) error {
	var broken brokenAnswer
	if ctx.Err() == nil && errors.As(err, &broken) {
		return &hns.Error{Op: op, ID: id, Err: fmt.Errorf("the HNS service at %s answered with a broken frame: %w", c.path, broken.err)}
	}
	return c.unreachable(ctx, op, id, err)
}

// unreachable is the error of a call that got no answer: the context's when it ended, else HNS not
// running, which says nothing about the object (the call may or may not have been made).
func (c *Client) unreachable(ctx context.Context, op hns.Op, id string, err error) error {
	if ctx.Err() != nil {
		return &hns.Error{Op: op, ID: id, Err: ctx.Err()}
	}
	return &hns.Error{Op: op, ID: id, Kind: hns.ErrHNSNotRunning, Err: fmt.Errorf("the HNS service at %s: %w", c.path, err)}
}

// decode makes a call and decodes its JSON answer as a T.
func decode[T any](ctx context.Context, c *Client, op hns.Op, id string, args request) (T, error) {
	var out T
	text, err := c.call(ctx, op, id, args)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(text, &out); err != nil {
		return out, &hns.Error{Op: op, ID: id, Err: fmt.Errorf("reading the HNS service's answer: %w", err)}
	}
	return out, nil
}

// ids makes an ID enumeration, keeping the answer's text (hns.IDList).
func (c *Client) ids(ctx context.Context, op hns.Op, id string, args request) (hns.IDList, error) {
	text, err := c.call(ctx, op, id, args)
	if err != nil {
		return hns.IDList{}, err
	}
	// The list keeps the answer's text: a string over the bytes read, which nothing else holds or
	// writes (readAnswer makes them for this answer), not a copy of up to 5 MB at every check.
	l, err := hns.ParseIDList(unsafe.String(unsafe.SliceData(text), len(text)))
	if err != nil {
		return hns.IDList{}, &hns.Error{Op: op, ID: id, Err: err}
	}
	return l, nil
}

func (c *Client) Version(ctx context.Context) (hns.Version, error) {
	return decode[hns.Version](ctx, c, hns.OpVersion, "", request{})
}

func (c *Client) GetNetworkByName(ctx context.Context, name string) (hns.Network, error) {
	return decode[hns.Network](ctx, c, hns.OpGetNetworkByName, name, request{Name: name})
}

func (c *Client) ListEndpoints(ctx context.Context, networkID string) ([]hns.Endpoint, error) {
	return decode[[]hns.Endpoint](ctx, c, hns.OpListEndpoints, networkID, request{NetworkID: networkID})
}

func (c *Client) GetEndpointByName(ctx context.Context, name string) (hns.Endpoint, error) {
	return decode[hns.Endpoint](ctx, c, hns.OpGetEndpointByName, name, request{Name: name})
}

func (c *Client) CreateEndpoint(ctx context.Context, networkID string, ep hns.Endpoint) (hns.Endpoint, error) {
	return decode[hns.Endpoint](ctx, c, hns.OpCreateEndpoint, networkID, request{NetworkID: networkID, Endpoint: &ep})
}

func (c *Client) DeleteEndpoint(ctx context.Context, id string) error {
	_, err := c.call(ctx, hns.OpDeleteEndpoint, id, request{ID: id})
	return err
}

func (c *Client) ListLoadBalancers(ctx context.Context) ([]hns.LoadBalancer, error) {
	return decode[[]hns.LoadBalancer](ctx, c, hns.OpListLoadBalancers, "", request{})
}

func (c *Client) ListEndpointIDs(ctx context.Context, networkID string) (hns.IDList, error) {
	return c.ids(ctx, hns.OpListEndpointIDs, networkID, request{NetworkID: networkID})
}

func (c *Client) ListLoadBalancerIDs(ctx context.Context) (hns.IDList, error) {
	return c.ids(ctx, hns.OpListLoadBalancerIDs, "", request{})
}

func (c *Client) GetLoadBalancer(ctx context.Context, id string) (hns.LoadBalancer, error) {
	return decode[hns.LoadBalancer](ctx, c, hns.OpGetLoadBalancer, id, request{ID: id})
}

func (c *Client) CreateLoadBalancer(ctx context.Context, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	return decode[hns.LoadBalancer](ctx, c, hns.OpCreateLoadBalancer, "", request{LoadBalancer: &lb})
}

func (c *Client) ModifyLoadBalancer(ctx context.Context, id string, lb hns.LoadBalancer) (hns.LoadBalancer, error) {
	return decode[hns.LoadBalancer](ctx, c, hns.OpModifyLoadBalancer, id, request{ID: id, LoadBalancer: &lb})
}

func (c *Client) DeleteLoadBalancer(ctx context.Context, id string) error {
	_, err := c.call(ctx, hns.OpDeleteLoadBalancer, id, request{ID: id})
	return err
}
