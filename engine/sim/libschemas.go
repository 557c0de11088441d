package sim

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/crw-dev/crw/lib"
	"github.com/crw-dev/crw/runtime/vm"
)

var (
	libOnce    sync.Once
	libExports map[string]json.RawMessage
	libErr     error
)

// LibSchema is a crw:lib/schemas export, as a workflow that imports it has it.
func LibSchema(name string) ([]byte, error) {
	libOnce.Do(func() { libExports, libErr = vm.Exports(lib.FS, "schemas.js") })
	if libErr != nil {
		return nil, libErr
	}
	s, ok := libExports[name]
	if !ok {
		return nil, fmt.Errorf("crw:lib/schemas has no export %q", name)
	}
	return s, nil
}
