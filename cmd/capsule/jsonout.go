package main

import (
	"encoding/json"
	"io"
	"reflect"
)

// printJSON prints v as indented JSON, with every nil slice in it printed
// as [] rather than null: a list that is empty is still a list.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(emptyLists(v))
}

// emptyLists returns a copy of v whose nil slices, at any depth reached
// through structs, pointers and slices, are empty slices. Values behind
// pointers are changed in place.
func emptyLists(v any) any {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return v
	}
	cp := reflect.New(rv.Type()).Elem()
	cp.Set(rv)
	fillSlices(cp, 0)
	return cp.Interface()
}

func fillSlices(v reflect.Value, depth int) {
	if depth > 32 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			fillSlices(v.Elem(), depth+1)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fillSlices(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		if v.IsNil() {
			if v.CanSet() && v.Type().Elem().Kind() != reflect.Uint8 {
				v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			}
			return
		}
		for i := 0; i < v.Len(); i++ {
			fillSlices(v.Index(i), depth+1)
		}
	}
}
