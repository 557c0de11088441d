package vm

import (
	"encoding/json"
	"fmt"
	"io/fs"

	"github.com/dop251/goja"
	"github.com/evanw/esbuild/pkg/api"
)

// Exports evaluates a module of fsys alone (no imports, no crw modules: a built-in crw:lib module) and returns its exports that are not functions, as JSON:
// what a workflow's import hands to the strict check.
func Exports(fsys fs.FS, name string) (map[string]json.RawMessage, error) {
	src, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	res := api.Transform(string(src), api.TransformOptions{
		Loader: api.LoaderJS, Format: api.FormatCommonJS, Target: api.ES2022, Sourcefile: name,
	})
	if len(res.Errors) > 0 {
		return nil, fmt.Errorf("%s: %s", name, res.Errors[0].Text)
	}
	vm := goja.New()
	module := vm.NewObject()
	_ = module.Set("exports", vm.NewObject())
	_ = vm.Set("module", module)
	if _, err := vm.RunString("(function (exports) {\n" + string(res.Code) + "\n})(module.exports)"); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	v, err := vm.RunString(`(function () {
		var e = module.exports, out = {};
		Object.keys(e).forEach(function (k) { if (typeof e[k] !== "function") out[k] = e[k]; });
		return JSON.stringify(out);
	})()`)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v.String()), &m); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return m, nil
}
