package imagebuild

// The base images, pinned by digest in this one place. The Dockerfile's FROM lines name the same
// references (a test keeps them equal). To move to a newer base, put the digest that
// `crane digest <image>:<tag>` (or `docker buildx imagetools inspect`) prints for the tag here and
// in the Dockerfile, and run `make images`: the digest is of the multi-platform index, so one pin
// covers every platform.
const (
	// ControllerBase is distroless static on Debian 12, as its nonroot user (65532): CA
	// certificates, tzdata and an /etc/passwd that names the user, no shell, nothing else. The
	// controller is a static Go binary and needs no more.
	ControllerBase = "gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab"

	// AgentBase is the HostProcess base image: a layer of a few KB (its licence files) and a
	// windows/amd64 config without os.version. A HostProcess container runs on the host itself, so
	// none of a Windows Server base image's system files are used, and an image without
	// os.version runs on every Windows Server release, where a nanoserver or servercore base would
	// tie the image to one.
	AgentBase = "mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0@sha256:b4c9637e032f667c52d1eccfa31ad8c63f1b035e8639f3f48a510536bf34032b"
)
