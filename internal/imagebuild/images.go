package imagebuild

import (
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Image is one of winproxy's images: the binary it carries, the base it is built on, the platforms
// it is built for and how a container of it starts. The Dockerfile's targets describe the same
// images (a test keeps them equal).
type Image struct {
	// Name is the image's repository name under a registry.
	Name string
	// Package is the binary's Go package, relative to the module root.
	Package string
	// Base is the base image, pinned by digest.
	Base string
	// Platforms are built in this order into the image's index.
	Platforms []v1.Platform
	// Binary is the binary's path in the container's file system, slash-separated from the root
	// (C:\ on Windows).
	Binary string
	// Entrypoint, WorkingDir and User are the image config's; the base's Cmd is dropped, as a
	// Dockerfile's ENTRYPOINT drops it.
	Entrypoint []string
	WorkingDir string
	User       string
	// Description is the org.opencontainers.image.description label.
	Description string
}

// Source is the org.opencontainers.image.source label: where the images' source lives.
const Source = "https://github.com/winproxy/winproxy"

// Controller is winproxy-controller's image on base (ControllerBase when empty): a static binary
// for Linux on amd64 and arm64, run as distroless's nonroot user, which the chart's restricted
// pod security context (runAsNonRoot) requires to be numeric.
func Controller(base string) Image {
	return Image{
		Name:        "winproxy-controller",
		Package:     "./cmd/winproxy-controller",
		Base:        orDefault(base, ControllerBase),
		Platforms:   []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}},
		Binary:      "/winproxy-controller",
		Entrypoint:  []string{"/winproxy-controller"},
		WorkingDir:  "/",
		User:        "65532:65532",
		Description: "winproxy-controller resolves WindowsProxyConfigs per Windows node and rolls them out.",
	}
}

// AgentCommand starts the agent in a HostProcess container. Such a container runs on the host,
// with the image's files mounted where hcsshim says in CONTAINER_SANDBOX_MOUNT_POINT (C:\hpc with
// containerd 1.7 and later, C:\C\<container id> before); hcsshim puts that path in place of
// $env:CONTAINER_SANDBOX_MOUNT_POINT in the command line, so the command finds the binary on
// every containerd. The chart's DaemonSet starts the same command.
const AgentCommand = "$env:CONTAINER_SANDBOX_MOUNT_POINT/winproxy-agent.exe"

// AgentWorkingDir is where a HostProcess container's image files are with containerd 1.7 and
// later (KEP 1981), so relative paths resolve in the image; without it containerd releases before
// containerd/containerd#10069 start HostProcess containers in the host's C:\.
const AgentWorkingDir = `C:\hpc`

// Agent is winproxy-agent's image on base (AgentBase when empty): the Windows binary on the
// HostProcess base image, for windows/amd64 without os.version, so one image serves every Windows
// Server release. It has no user: a HostProcess pod's runAsUserName decides.
func Agent(base string) Image {
	return Image{
		Name:        "winproxy-agent",
		Package:     "./cmd/winproxy-agent",
		Base:        orDefault(base, AgentBase),
		Platforms:   []v1.Platform{{OS: "windows", Architecture: "amd64"}},
		Binary:      "/winproxy-agent.exe",
		Entrypoint:  []string{AgentCommand},
		WorkingDir:  AgentWorkingDir,
		Description: "winproxy-agent programs HNS load balancers on a Windows node in place of kube-proxy (a HostProcess container).",
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
