package migrate

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	"sigs.k8s.io/yaml"
)

// Input is what kube-proxy was given, gathered from every source migrate read: configuration
// files first, then environments, then command lines, each later value winning as kube-proxy's
// flags win over its file.
type Input struct {
	values map[string]value
	// order is the order settings were first seen, for warnings in reading order.
	order []string
	// env holds the environment variables the DaemonSet and the scripts set (KUBE_NETWORK).
	env map[string]string
	// scripts are the texts around the command lines (start scripts), where a value given as a
	// variable may be computed.
	scripts []string
	// notes are warnings found while reading (a container whose flags are not visible, a
	// configuration field kube-proxy 1.37 does not know).
	notes []string
	// flags counts the kube-proxy flags read from command lines.
	flags int
	// hidden are warnings about containers whose flags are not visible (a script of the image):
	// moot once a command line gives flags.
	hidden []string
}

// value is one setting's raw value and where it was read.
type value struct {
	raw, from string
}

// NewInput returns an empty Input.
func NewInput() *Input {
	return &Input{values: map[string]value{}, env: map[string]string{}}
}

func (in *Input) set(key, raw, from string) {
	if _, seen := in.values[key]; !seen {
		in.order = append(in.order, key)
	}
	in.values[key] = value{raw: raw, from: from}
}

// Note records a warning about the input itself.
func (in *Input) Note(format string, args ...any) {
	in.notes = append(in.notes, fmt.Sprintf(format, args...))
}

// SetEnv records an environment variable of kube-proxy's process.
func (in *Input) SetEnv(name, val string) { in.env[name] = val }

// flagToken is a kube-proxy flag in a command line or script: --name or --name=value, possibly
// inside quotes, an array literal or after a line continuation.
var flagToken = regexp.MustCompile("(?:^|[\\s\"'`(,@])--([a-z][a-z0-9-]*)(?:=([^\\s\"'`)]*))?")

// AddCommandLine reads the kube-proxy flags of a command line, or of a start script that builds
// one; from names it in messages.
func (in *Input) AddCommandLine(text, from string) {
	in.scripts = append(in.scripts, text)
	for _, m := range assignment.FindAllStringSubmatch(text, -1) {
		if strings.EqualFold(m[1], "env:") {
			in.env[m[2]] = m[3]
		}
	}
	locs := flagToken.FindAllStringSubmatchIndex(text, -1)
	for _, loc := range locs {
		name := text[loc[2]:loc[3]]
		s, ok := ByFlag(name)
		if !ok {
			in.Note("--%s (%s) is not a flag of kube-proxy 1.37: ignored", name, from)
			continue
		}
		in.flags++
		switch {
		case loc[4] >= 0:
			in.set(s.Name(), strings.TrimSuffix(text[loc[4]:loc[5]], ","), from)
		case s.Bool:
			in.set(s.Name(), "true", from)
		default:
			in.set(s.Name(), nextWord(text[loc[1]:]), from)
		}
	}
}

// nextWord is the value after a flag given as "--flag value".
func nextWord(rest string) string {
	fields := strings.FieldsFunc(rest, func(r rune) bool { return strings.ContainsRune(" \t\r\n\"'`,()", r) })
	if len(fields) == 0 || strings.HasPrefix(fields[0], "-") {
		return ""
	}
	return fields[0]
}

// AddConfig reads a KubeProxyConfiguration file with upstream's own types
// (k8s.io/kube-proxy/config/v1alpha1). Fields kube-proxy 1.37 does not know are reported and
// ignored, as kube-proxy does with its lenient decoding.
func (in *Input) AddConfig(data []byte, from string) error {
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &meta); err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	want := kubeproxyv1alpha1.SchemeGroupVersion.String()
	if meta.APIVersion != want || meta.Kind != "KubeProxyConfiguration" {
		return fmt.Errorf("%s: apiVersion %q, kind %q: want a KubeProxyConfiguration of %s", from, meta.APIVersion, meta.Kind, want)
	}
	var cfg kubeproxyv1alpha1.KubeProxyConfiguration
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		if err := yaml.Unmarshal(data, &cfg); err != nil {
			return fmt.Errorf("%s: %w", from, err)
		}
		in.Note("%s: %v; kube-proxy 1.37 ignores what it does not know, and so does migrate", from, err)
	}
	fields, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	for _, s := range Settings {
		if s.Config == "" {
			continue
		}
		v, found, err := unstructured.NestedFieldNoCopy(fields, strings.Split(s.Config, ".")...)
		if err != nil || !found {
			continue
		}
		if raw := configValue(v); !isDefault(s, raw) {
			in.set(s.Name(), raw, from)
		}
	}
	return nil
}

// configValue writes a configuration value as its flag would be written.
func configValue(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case map[string]any:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(v)) {
			parts = append(parts, fmt.Sprintf("%s=%v", k, v[k]))
		}
		return strings.Join(parts, ",")
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = fmt.Sprint(e)
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v)
}

// isDefault reports a value a configuration file holds when the field is left at kube-proxy's
// default (kubeadm writes every field).
func isDefault(s Setting, raw string) bool {
	switch raw {
	case "", "0", "0s", "false":
		return true
	case "0.0.0.0", "::":
		return s.Flag == "bind-address"
	case "text":
		return s.Flag == "logging-format"
	}
	return false
}

// assignment is a variable set in a script: PowerShell ($name = "x", $env:NAME = "x") or a
// POSIX shell (NAME=x, export NAME=x).
var assignment = regexp.MustCompile(`(?mi)^\s*(?:export\s+|set\s+)?\$?(env:)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*["']?([^"'\r\n;]*)["']?\s*;?\s*$`)

// resolve returns the literal a value stands for: the value itself, or, for a variable ($x,
// $env:X, ${X}, $(X), %X%), what the environment or a script assigns to it, when that is a
// literal. ok is false for a value computed on the node.
func (in *Input) resolve(raw string) (string, bool) {
	for range 4 {
		name, isVar := variableName(raw)
		if !isVar {
			return raw, true
		}
		next, found := in.lookup(name)
		if !found {
			return raw, false
		}
		raw = next
	}
	return raw, false
}

var variable = regexp.MustCompile(`^(?:\$env:([A-Za-z_][A-Za-z0-9_]*)|\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?|\$\(([A-Za-z_][A-Za-z0-9_]*)\)|%([A-Za-z_][A-Za-z0-9_]*)%)$`)

func variableName(raw string) (string, bool) {
	m := variable.FindStringSubmatch(raw)
	if m == nil {
		return "", strings.ContainsAny(raw, "$%")
	}
	for _, g := range m[1:] {
		if g != "" {
			return g, true
		}
	}
	return "", true
}

// lookup finds what the environment or a script assigns to name (PowerShell's names ignore case).
func (in *Input) lookup(name string) (string, bool) {
	for k, v := range in.env {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	for _, script := range in.scripts {
		for _, m := range assignment.FindAllStringSubmatch(script, -1) {
			// A value with spaces is a command's output, computed on the node.
			if strings.EqualFold(m[2], name) && !strings.ContainsAny(strings.TrimSpace(m[3]), " \t(") {
				return strings.TrimSpace(m[3]), true
			}
		}
	}
	return "", false
}
