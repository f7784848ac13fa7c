package v1alpha1_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/winproxy/winproxy/api/v1alpha1"
)

// TestDefaultsMatchCRD checks that the defaults Go code uses are the ones the CRD's markers give.
func TestDefaultsMatchCRD(t *testing.T) {
	b, err := os.ReadFile("../../config/crd/bases/winproxy.io_windowsproxyconfigs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	for path, want := range map[string]string{
		"healthCheck.port":                       strconv.Itoa(v1alpha1.DefaultHealthCheckPort),
		"healthCheck.rootEndpointName":           strconv.Quote(v1alpha1.DefaultRootEndpointName),
		"sync.periodSeconds":                     strconv.Itoa(v1alpha1.DefaultSyncPeriodSeconds),
		"overlay.sourceVIP.create.offsetFromEnd": strconv.Itoa(v1alpha1.DefaultSourceVIPOffsetFromEnd),
	} {
		s := spec
		for _, p := range strings.Split(path, ".") {
			s = s.Properties[p]
		}
		if s.Default == nil {
			t.Errorf("spec.%s has no default in the CRD", path)
			continue
		}
		if got := string(s.Default.Raw); got != want {
			t.Errorf("spec.%s: the CRD defaults it to %s, Go code to %s", path, got, want)
		}
	}
}
