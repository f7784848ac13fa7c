package daemon

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// cacheMeta is the metadata of what the informers store in the engine's form (cachedService,
// cachedSlice): what an informer keys and versions an object by. The API's ObjectMeta is 248
// bytes, this 48; at 10k Services and as many slices that is 4 MB of the agent's live heap. The
// UID is left out too (1.3 MB more): the agent names Services and slices by namespace and name, as
// kube-proxy does, and so does the one Event it records on a Service (events.go). Everything else
// reads as unset, and setting it keeps nothing: the agent never reads it, and the cache never sets
// it (no default transform runs on these objects).
type cacheMeta struct {
	namespace, name, resourceVersion string
}

var _ metav1.Object = &cacheMeta{}

func metaOf(o metav1.Object) cacheMeta {
	return cacheMeta{namespace: o.GetNamespace(), name: o.GetName(), resourceVersion: o.GetResourceVersion()}
}

func (m *cacheMeta) GetNamespace() string                { return m.namespace }
func (m *cacheMeta) SetNamespace(namespace string)       { m.namespace = namespace }
func (m *cacheMeta) GetName() string                     { return m.name }
func (m *cacheMeta) SetName(name string)                 { m.name = name }
func (*cacheMeta) GetUID() types.UID                     { return "" }
func (*cacheMeta) SetUID(types.UID)                      {}
func (m *cacheMeta) GetResourceVersion() string          { return m.resourceVersion }
func (m *cacheMeta) SetResourceVersion(version string)   { m.resourceVersion = version }
func (*cacheMeta) GetGenerateName() string               { return "" }
func (*cacheMeta) SetGenerateName(string)                {}
func (*cacheMeta) GetGeneration() int64                  { return 0 }
func (*cacheMeta) SetGeneration(int64)                   {}
func (*cacheMeta) GetSelfLink() string                   { return "" }
func (*cacheMeta) SetSelfLink(string)                    {}
func (*cacheMeta) GetCreationTimestamp() metav1.Time     { return metav1.Time{} }
func (*cacheMeta) SetCreationTimestamp(metav1.Time)      {}
func (*cacheMeta) GetDeletionTimestamp() *metav1.Time    { return nil }
func (*cacheMeta) SetDeletionTimestamp(*metav1.Time)     {}
func (*cacheMeta) GetDeletionGracePeriodSeconds() *int64 { return nil }
func (*cacheMeta) SetDeletionGracePeriodSeconds(*int64)  {}
func (*cacheMeta) GetLabels() map[string]string          { return nil }
func (*cacheMeta) SetLabels(map[string]string)           {}
func (*cacheMeta) GetAnnotations() map[string]string     { return nil }
func (*cacheMeta) SetAnnotations(map[string]string)      {}
func (*cacheMeta) GetFinalizers() []string               { return nil }
func (*cacheMeta) SetFinalizers([]string)                {}
func (*cacheMeta) GetOwnerReferences() []metav1.OwnerReference {
	return nil
}
func (*cacheMeta) SetOwnerReferences([]metav1.OwnerReference)    {}
func (*cacheMeta) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (*cacheMeta) SetManagedFields([]metav1.ManagedFieldsEntry)  {}
