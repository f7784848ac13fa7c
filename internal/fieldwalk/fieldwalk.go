// Package fieldwalk changes a value one field at a time, for tests of hand-written comparisons.
//
// The agent compares a few structs on every sync field by field instead of with
// reflect.DeepEqual, which allocates and walks by reflection (docs/performance.md). Such a
// comparison is only right while it names every field: a field added to the type and not
// compared would make two different values read as the same. A test walks the type with Each and
// expects the comparison to see each change.
package fieldwalk

import (
	"errors"
	"reflect"
	"time"
)

// Each calls f for each field under v, which must be settable, with a change to it: another
// value, or no value for a pointer. It goes down into structs, pointers, and the first element of
// a slice; path names the field from the root's name given. A kind Each cannot change panics,
// naming the field, so that a new field's kind is added here rather than skipped.
func Each(v reflect.Value, path string, f func(path string, change func())) {
	switch v.Kind() {
	case reflect.Struct:
		if !exported(v.Type()) {
			opaque(v, path, f)
			return
		}
		for i := range v.NumField() {
			Each(v.Field(i), path+"."+v.Type().Field(i).Name, f)
		}
	case reflect.Pointer:
		if v.IsNil() {
			panic(path + ": a nil pointer, whose fields Each cannot change; give it a value")
		}
		Each(v.Elem(), path, f)
		f(path+" (unset)", func() { v.SetZero() })
	case reflect.Interface:
		if v.Type() != errorType {
			panic(path + ": an interface other than error, which Each does not change yet")
		}
		f(path, func() { v.Set(reflect.ValueOf(errors.New(path + " changed"))) })
	case reflect.Bool:
		f(path, func() { v.SetBool(!v.Bool()) })
	case reflect.String:
		f(path, func() { v.SetString(v.String() + "x") })
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		f(path, func() { v.SetInt(v.Int() + 1) })
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		f(path, func() { v.SetUint(v.Uint() + 1) })
	case reflect.Slice:
		if v.Len() > 0 {
			Each(v.Index(0), path+"[0]", f)
		}
		f(path, func() { v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem()))) })
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			panic(path + ": a map whose keys are not strings, which Each does not change yet")
		}
		f(path, func() {
			if v.IsNil() {
				v.Set(reflect.MakeMap(v.Type()))
			}
			v.SetMapIndex(reflect.ValueOf("added").Convert(v.Type().Key()), reflect.Zero(v.Type().Elem()))
		})
	default:
		panic(path + ": a field of kind " + v.Kind().String() + ", which Each does not change yet")
	}
}

// Changes calls f once for each field Each finds under a value fresh makes, with a new value from
// fresh whose field alone is changed, and returns how many fields it found. fresh must make equal
// values, and none that shares memory with another.
func Changes[T any](fresh func() T, root string, f func(path string, changed T)) int {
	var paths []string
	v := fresh()
	Each(reflect.ValueOf(&v).Elem(), root, func(path string, _ func()) { paths = append(paths, path) })
	for i, path := range paths {
		changed, n := fresh(), 0
		Each(reflect.ValueOf(&changed).Elem(), root, func(_ string, change func()) {
			if n == i {
				change()
			}
			n++
		})
		f(path, changed)
	}
	return len(paths)
}

var (
	errorType = reflect.TypeFor[error]()
	timeType  = reflect.TypeFor[time.Time]()
)

// opaque changes a struct whose fields are not all exported (time.Time, netip.Addr) as one value:
// a time a second later, any other to its zero value.
func opaque(v reflect.Value, path string, f func(path string, change func())) {
	switch {
	case v.Type() == timeType:
		f(path, func() { v.Set(reflect.ValueOf(v.Interface().(time.Time).Add(time.Second))) })
	case !v.IsZero():
		f(path, func() { v.SetZero() })
	default:
		panic(path + ": a zero " + v.Type().String() + ", which Each cannot change; give it a value")
	}
}

// exported reports whether every field of the struct type t is exported.
func exported(t reflect.Type) bool {
	for i := range t.NumField() {
		if !t.Field(i).IsExported() {
			return false
		}
	}
	return true
}
