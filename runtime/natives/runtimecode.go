package natives

import (
	"reflect"
	"unsafe"

	"github.com/dop251/goja/file"
	"github.com/dop251/goja/parser"
	"github.com/dop251/goja/token"
	"github.com/dop251/goja/unistring"

	"github.com/crw-dev/crw/runtime/nesting"
)

// Code a script builds while it runs (the text it gives eval, direct or indirect, the Function
// constructor, and the async and generator function constructors reached through
// (async function () {}).constructor and the like) never passes through the loader, whose
// nesting bound keeps goja's recursive parser from overflowing the Go stack: eval("[".repeat(1e6))
// ended the process. goja has no hook on the source of a direct eval, and a wrapper around the
// global eval would make every eval indirect (a direct eval sees the caller's locals because goja
// compares the callee with its own eval). What goja does have is the runtime's parser options
// (SetParserOptions): it applies them to every parse it makes of runtime-built code, a direct
// eval's included, each option a function called with the parser it has just built around the
// source. crw's option reads the source from that parser, with the layout checked below, and
// refuses it with a RangeError before the parse begins.

// gojaParser mirrors goja's parser up to its options, whose address is what an option is given:
// the source is the parser's first field.
type gojaParser struct {
	str               string
	length            int
	base              int
	chr               rune
	chrOffset         int
	offset            int
	idx               file.Idx
	token             token.Token
	literal           string
	parsedLiteral     unistring.String
	scope             unsafe.Pointer
	insertSemicolon   bool
	implicitSemicolon bool
	errors            parser.ErrorList
	recover           struct {
		idx   file.Idx
		count int
	}
	mode parser.Mode
	opts struct {
		disableSourceMaps bool
		sourceMapLoader   func(path string) ([]byte, error)
	}
}

// parserSource reads the source of the parser whose options opts points at.
func parserSource(opts unsafe.Pointer) (string, bool) {
	p := (*gojaParser)(unsafe.Add(opts, -int(unsafe.Offsetof(gojaParser{}.opts))))
	// The length and base fields frame the source: they must agree with it before it is read.
	if p.length != len(p.str) || p.base != 1 {
		return "", false
	}
	return p.str, true
}

// sourceOption makes a parser option that calls check with the source of every parse.
func sourceOption(check func(src string, ok bool)) parser.Option {
	fn := reflect.MakeFunc(reflect.TypeOf(parser.Option(nil)), func(args []reflect.Value) []reflect.Value {
		check(parserSource(args[0].UnsafePointer()))
		return nil
	})
	return fn.Interface().(parser.Option)
}

// parserLayoutOK reports whether gojaParser matches the goja crw is built with: a parse of a
// known source must show that source. If it does not (goja changed), runtime-built code is
// refused outright rather than parsed unbounded.
var parserLayoutOK = func() bool {
	const probe = "probe + 'for the parser layout'"
	ok := false
	_, _ = parser.ParseFile(nil, "", probe, 0, sourceOption(func(src string, read bool) {
		ok = read && src == probe
	}))
	return ok
}()

// guardRuntimeCode bounds the nesting of runtime-built code as the loader bounds a module's.
// Source maps are not read for it: a sourceMappingURL comment in an eval'd string would name a
// file for goja to read.
func (v *Guards) guardRuntimeCode() {
	v.rt.SetParserOptions(parser.WithDisableSourceMaps, sourceOption(func(src string, ok bool) {
		if !ok || !parserLayoutOK {
			v.throwRange("eval and the Function constructor are not available: crw cannot bound the code they parse with this goja")
		}
		if err := nesting.Check(src); err != nil {
			v.throwRange("code built at run time (eval, Function): %s", err.Error())
		}
	}))
}
