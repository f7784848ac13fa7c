package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sync"
)

// upstreamDriver is a running upstream driver process (see
// upstream/driver): it answers one Result per Cluster written to it. Its
// fake HNS is global state, so one process runs one cluster at a time.
type upstreamDriver struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	enc    *json.Encoder
	w      *bufio.Writer
	dec    *json.Decoder
	stderr *lockedBuffer
}

func startUpstream(bin string) (*upstreamDriver, error) {
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	d := &upstreamDriver{cmd: cmd, stdin: stdin, stderr: &lockedBuffer{}}
	cmd.Stderr = d.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d.w = bufio.NewWriter(stdin)
	d.enc = json.NewEncoder(d.w)
	d.dec = json.NewDecoder(bufio.NewReader(stdout))
	return d, nil
}

// Run runs c on upstream.
func (d *upstreamDriver) Run(c *Cluster) (*Result, error) {
	if err := d.enc.Encode(c); err != nil {
		return nil, d.failed(err)
	}
	if err := d.w.Flush(); err != nil {
		return nil, d.failed(err)
	}
	var r Result
	if err := d.dec.Decode(&r); err != nil {
		return nil, d.failed(err)
	}
	if r.Name != c.Name {
		return nil, fmt.Errorf("upstream driver answered for %q, not %q", r.Name, c.Name)
	}
	return &r, nil
}

func (d *upstreamDriver) failed(err error) error {
	return fmt.Errorf("upstream driver: %w\n%s", err, d.stderr.String())
}

// Close ends the driver.
func (d *upstreamDriver) Close() error {
	_ = d.stdin.Close()
	if err := d.cmd.Wait(); err != nil {
		return d.failed(err)
	}
	return nil
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
