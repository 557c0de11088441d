package loader

import "github.com/crw-dev/crw/runtime/nesting"

// MaxNesting bounds how deeply a module's source may nest (nesting.Max).
const MaxNesting = nesting.Max

// NestingError is a source that nests more than MaxNesting levels deep, and where it gets too
// deep: a 1-based line, and a column in characters.
type NestingError = nesting.Error

// CheckNesting applies the bound of a module's source to any JavaScript source: the runtime
// checks with it the text a script gives eval or the Function constructor, which never passes
// through the loader and whose parse would overflow the Go stack just as deeply.
func CheckNesting(src string) *NestingError { return nesting.Check(src) }

// checkNesting refuses a source that nests more than MaxNesting levels before esbuild or goja
// sees it (nesting.Check), as a LoadError of the module.
func checkNesting(name, module string, src []byte) *LoadError {
	if err := nesting.Check(string(src)); err != nil {
		return &LoadError{Code: CodeTooDeep, Module: module, File: name, Line: err.Line, Column: err.Column, Message: nesting.TooDeep}
	}
	return nil
}
