package errs

import "fmt"

// FieldError is what is wrong with one field of a request, the field named as the engine names
// it: "input", "pool", "limits.heap_bytes", "backend_opts.answers". An Error about a field
// carries one (errors.As finds it), and its detail is "FIELD[ VALUE]: PROBLEM". The engine
// never names a flag or a tool's argument: the command line and the MCP server give the
// detail their own name of the field (Named).
type FieldError struct {
	Field string
	// Value is what names the wrong value in the detail, when it helps to (a path, a ref, a
	// variable's name); "" for none.
	Value string
	// Problem is what is wrong with it, in words that name no other field.
	Problem string
}

func (f *FieldError) Error() string { return f.Detail(f.Field) }

// Detail is the error's detail with the field called name.
func (f *FieldError) Detail(name string) string {
	if f.Value != "" {
		name += " " + f.Value
	}
	return name + ": " + f.Problem
}

// Field is an invalid_request about one field of the request: value names the wrong value
// ("" for none), format and args say what is wrong with it.
func Field(field, value, format string, args ...any) *Error {
	return NewField(InvalidRequest, field, value, format, args...)
}

// NewField is an Error of code about one field of the request, as Field; a code other than
// invalid_request is for a field whose value is missing from the host (no owner thread, no
// codex binary).
func NewField(code Code, field, value, format string, args ...any) *Error {
	f := &FieldError{Field: field, Value: Bound(value), Problem: Bound(fmt.Sprintf(format, args...))}
	return &Error{Code: code, Message: code.Message(), Detail: Bound(f.Error()), field: f}
}

// FieldOf is the FieldError err carries, nil when it is about no field.
func FieldOf(err error) *FieldError {
	if e, ok := As(err); ok {
		return e.field
	}
	return nil
}

// Named is err with its field called as name calls it (a flag, a tool's argument): a copy of
// its Error whose detail names the field so, the rest (code, diagnostic, cause, field) kept.
// err is returned as it is when it is about no field, or name has no name for it ("").
//
// The fields its next action (NextNaming) or its detail (NewNaming) names are called so too.
func Named(err error, name func(field string) string) error {
	e, ok := As(err)
	if !ok || (e.field == nil && e.nextNaming == "" && e.detailNaming == "") {
		return err
	}
	c, named := *e, false
	if e.detailNaming != "" {
		c.Detail, named = Bound(nameFields(e.detailNaming, name)), true
	}
	if e.field != nil {
		if n := name(e.field.Field); n != "" {
			c.Detail, named = Bound(e.field.Detail(n)), true
		}
	}
	if e.nextNaming != "" && e.Diagnostic != nil {
		d := *e.Diagnostic
		d.NextAction = Bound(nameFields(e.nextNaming, name))
		c.Diagnostic, named = &d, true
	}
	if !named {
		return err
	}
	return &c
}
