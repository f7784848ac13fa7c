//go:build !windows

package images

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/winproxy/winproxy/internal/imagebuild"
)

// stage is what a Dockerfile stage says of its image.
type stage struct {
	from, workdir, user string
	copies              []string // destinations
	entrypoint          []string
	labels              map[string]string
}

// labelPair is one key=value of a LABEL instruction, the value quoted or not.
var labelPair = regexp.MustCompile(`([\w.-]+)=("[^"]*"|\S+)`)

// readDockerfile reads the stages of a Dockerfile by name, for the instructions its image stages
// use; line continuations are joined and the escape character (\) is applied to WORKDIR.
func readDockerfile(t *testing.T, path string) map[string]*stage {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	stages := map[string]*stage{}
	var cur *stage
	for _, line := range strings.Split(strings.ReplaceAll(string(data), "\\\n", " "), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch arg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), fields[0])); fields[0] {
		case "FROM":
			cur = &stage{from: fields[1], labels: map[string]string{}}
			stages[fields[len(fields)-1]] = cur
		case "WORKDIR":
			cur.workdir = strings.ReplaceAll(arg, `\\`, `\`)
		case "USER":
			cur.user = arg
		case "COPY":
			cur.copies = append(cur.copies, fields[len(fields)-1])
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(arg), &cur.entrypoint); err != nil {
				t.Fatalf("ENTRYPOINT %s is not in exec (JSON) form: %v", arg, err)
			}
		case "LABEL":
			for _, m := range labelPair.FindAllStringSubmatch(arg, -1) {
				cur.labels[m[1]] = strings.Trim(m[2], `"`)
			}
		}
	}
	return stages
}

// The Dockerfile builds the images `make images` builds: the same bases by digest, the binary at
// the same path, the same entrypoint, working directory and user, and labels of the same values.
func TestDockerfileDescribesTheImages(t *testing.T) {
	stages := readDockerfile(t, filepath.Join(env.RepoRoot, "Dockerfile"))
	for target, img := range map[string]imagebuild.Image{"controller": imagebuild.Controller(""), "agent": imagebuild.Agent("")} {
		s, ok := stages[target]
		if !ok {
			t.Fatalf("the Dockerfile has no %s target", target)
		}
		if s.from != img.Base {
			t.Errorf("%s: FROM %s, want %s (internal/imagebuild/bases.go)", target, s.from, img.Base)
		}
		if !reflect.DeepEqual(s.copies, []string{img.Binary}) {
			t.Errorf("%s: copies to %v, want only %s", target, s.copies, img.Binary)
		}
		if !reflect.DeepEqual(s.entrypoint, img.Entrypoint) || s.workdir != img.WorkingDir || s.user != img.User {
			t.Errorf("%s: ENTRYPOINT %q WORKDIR %q USER %q; want %q, %q, %q", target, s.entrypoint, s.workdir, s.user, img.Entrypoint, img.WorkingDir, img.User)
		}
		for key, want := range map[string]string{
			"org.opencontainers.image.title":       img.Name,
			"org.opencontainers.image.description": img.Description,
			"org.opencontainers.image.source":      imagebuild.Source,
			"org.opencontainers.image.licenses":    "Apache-2.0",
			"org.opencontainers.image.version":     "${VERSION}",
			"org.opencontainers.image.revision":    "${COMMIT}",
			"org.opencontainers.image.base.name":   strings.SplitN(img.Base, "@", 2)[0],
		} {
			if s.labels[key] != want {
				t.Errorf("%s: LABEL %s=%q, want %q", target, key, s.labels[key], want)
			}
		}
	}
}
