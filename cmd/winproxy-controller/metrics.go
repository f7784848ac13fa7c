package main

import (
	"crypto/tls"

	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The controller checks every metrics request with the apiserver, as kubebuilder v4 scaffolds do:
// a bearer token (TokenReview) allowed to GET /metrics (SubjectAccessReview), e.g. bound to the
// chart's metrics-reader ClusterRole.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// secureMetrics are the flags of the metrics endpoint's transport security.
type secureMetrics struct {
	secure      bool
	enableHTTP2 bool
	certPath    string
	certName    string
	keyName     string
}

func (m *secureMetrics) register(fs *pflag.FlagSet) {
	fs.BoolVar(&m.secure, "metrics-secure", true, "Serve /metrics over HTTPS, only to clients whose token may GET /metrics (authenticated and authorized by the apiserver); false serves plain HTTP to anyone.")
	fs.BoolVar(&m.enableHTTP2, "enable-http2", false, "Allow HTTP/2 on the metrics endpoint; off by default against the HTTP/2 Stream Cancellation and Rapid Reset CVEs.")
	fs.StringVar(&m.certPath, "metrics-cert-path", "", "Directory of the metrics server's certificate and key (e.g. from cert-manager); empty generates a self-signed certificate.")
	fs.StringVar(&m.certName, "metrics-cert-name", "tls.crt", "Certificate file name in --metrics-cert-path.")
	fs.StringVar(&m.keyName, "metrics-cert-key", "tls.key", "Key file name in --metrics-cert-path.")
}

func (m *secureMetrics) options(addr string) metricsserver.Options {
	o := metricsserver.Options{BindAddress: addr, SecureServing: m.secure}
	if !m.enableHTTP2 {
		o.TLSOpts = append(o.TLSOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	if m.secure {
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	if m.certPath != "" {
		o.CertDir, o.CertName, o.KeyName = m.certPath, m.certName, m.keyName
	}
	return o
}
