package loader

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/dop251/goja"

	"github.com/crw-dev/crw/runtime/jsutil"
)

// Codes of LoadError. They are stable: callers map them to user-facing
// errors and tests match on them.
const (
	CodeEntryInvalid    = "entry_invalid"     // Config.Entry is missing, not a file or has an unsupported extension
	CodeConfigInvalid   = "config_invalid"    // a LibDirs entry is not a directory
	CodeModuleUnknown   = "module_unknown"    // bare name, absolute path or unknown crw: name
	CodeModuleNotFound  = "module_not_found"  // a relative specifier that matches no file
	CodeModuleOutside   = "module_outside"    // a relative specifier that leaves its folder
	CodeModuleConflict  = "module_conflict"   // a crw:lib name served by a user lib dir and by the built-ins
	CodeModuleLocked    = "module_locked"     // a file first required after the workflow was loaded
	CodeSyntax          = "syntax_error"      // esbuild, goja or JSON could not parse a file
	CodeSchemaNotStrict = "schema_not_strict" // an export of a crw:lib/schemas module failed CheckSchema
	CodeNoEntry         = "no_entry"          // the workflow has no default export function
	CodeReadFailed      = "read_failed"       // a file that exists could not be read
	CodeTooDeep         = "too_deep"          // a source nests deeper than MaxNesting
)

// LoadError is a failure to resolve, read, compile or check a module.
// File, Line and Column point at the original source (before any
// transformation); Line and Column are 1-based and zero when unknown.
type LoadError struct {
	Code    string
	Module  string // the specifier or module name concerned
	File    string // the file the problem is in (for resolution errors: the importing file)
	Line    int
	Column  int
	Message string
	// Problems are the violations of a schema_not_strict error, each with its export, in the
	// order of the exports (crw schema check lists them).
	Problems []Problem
}

func (e *LoadError) Error() string {
	switch {
	case e.File == "":
		return e.Message
	case e.Line == 0:
		return e.File + ": " + e.Message
	default:
		return e.File + ":" + strconv.Itoa(e.Line) + ":" + strconv.Itoa(e.Column) + ": " + e.Message
	}
}

// evalError is an exception thrown while a module was evaluated. It keeps
// the exception so callers can errors.As it and format the JS stack.
type evalError struct {
	file string
	ex   *goja.Exception
	msg  string // what can safely be said of the thrown value
}

func (e *evalError) Error() string {
	var b strings.Builder
	b.WriteString("loader: evaluate ")
	b.WriteString(e.file)
	b.WriteString(": ")
	if err := e.ex.Unwrap(); err != nil {
		b.WriteString(err.Error())
	} else {
		b.WriteString(e.msg)
	}
	// The innermost JS frame says where the exception was thrown.
	for _, f := range e.ex.Stack() {
		if f.SrcName() != "<native>" {
			p := f.Position()
			fmt.Fprintf(&b, " at %s:%d:%d", displayFile(p.Filename), p.Line, p.Column)
			break
		}
	}
	return b.String()
}

func (e *evalError) Unwrap() error { return e.ex }

// FormatException returns the message of a JS exception, read through in
// (no script code runs), and its stack (FormatStack).
func FormatException(ex *goja.Exception, in *jsutil.Intrinsics) (message string, stack string) {
	if ex == nil {
		return "", ""
	}
	if err := ex.Unwrap(); err != nil {
		// A Go error thrown into JS reads better as the Go error itself than
		// as "GoError: ...".
		message = err.Error()
	} else {
		message = in.Thrown(ex.Value()).String
	}
	return message, FormatStack(ex)
}

// FormatStack returns the stack of a JS exception, one frame a line as
// "at fn (file:line:col)". Positions are those of the original files: every
// program compiled here carries a source map whose columns are shifted so
// that goja's lookup lands on the right mapping (see sourcemap.Fix), which
// leaves only the file name to clean up.
func FormatStack(ex *goja.Exception) string {
	var b strings.Builder
	for i, f := range ex.Stack() {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("at ")
		b.WriteString(f.FuncName())
		if f.SrcName() == "<native>" {
			b.WriteString(" (native)")
			continue
		}
		p := f.Position()
		b.WriteString(" (")
		b.WriteString(displayFile(p.Filename))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(p.Line))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(p.Column))
		b.WriteByte(')')
	}
	return b.String()
}

// displayFile undoes the URL escaping goja applies to source-mapped file
// names ("/my dir/x.ts" becomes "/my%20dir/x.ts").
func displayFile(name string) string {
	if name == "" {
		return "<eval>"
	}
	if u, err := url.Parse(name); err == nil && u.Scheme == "" {
		if s, err := url.PathUnescape(name); err == nil {
			return s
		}
	}
	return name
}

// unwrapLoad finds the LoadError behind an error returned by goja: a
// require() that failed throws a GoError wrapping it, and the exception
// propagates through every module above.
func unwrapLoad(err error) (*LoadError, bool) {
	var le *LoadError
	if errors.As(err, &le) {
		return le, true
	}
	return nil, false
}

func errorf(code, module, file string, format string, args ...any) *LoadError {
	return &LoadError{Code: code, Module: module, File: file, Message: fmt.Sprintf(format, args...)}
}
