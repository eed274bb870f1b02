package envspec

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SchemaV2JSON is the JSON Schema of version 2 of the spec (FORMAT
// §11.7.1), the version release 0.2.0 writes.
//
//go:embed spec.v2.schema.json
var SchemaV2JSON []byte

// SchemaV2URL is the $id of SchemaV2JSON.
const SchemaV2URL = "https://agentcapsule.dev/schema/environment/v2.json"

var compiledV2 = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(SchemaV2JSON))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaV2URL, doc); err != nil {
		return nil, err
	}
	return c.Compile(SchemaV2URL)
})

// CheckV2 validates data against the version-2 JSON Schema, structure only;
// Parse also applies the secret rules of §6.2.
func CheckV2(data []byte) error {
	sch, err := compiledV2()
	if err != nil {
		return fmt.Errorf("envspec: version 2 schema: %w", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%w: version 2: %w", ErrInvalid, err)
	}
	if err := sch.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return fmt.Errorf("%w: version 2: %s", ErrInvalid, ve.Error())
		}
		return fmt.Errorf("%w: version 2: %w", ErrInvalid, err)
	}
	return nil
}
