package journal

import "encoding/json"

// Typed rows: what code writes is built through these, each naming the fields its row type
// carries, so a reader sees which of Row's fields a row of that type uses. Row stays the wire
// format; Row() is the row to append.

// Warning is something a person should know that moves no call: of a call, or of the run
// (Call "").
type Warning struct {
	Call, Reason, Detail string
}

// Row is the warning row.
func (w Warning) Row() *Row {
	return &Row{Type: TypeWarning, Call: w.Call, Reason: w.Reason, Detail: w.Detail}
}

// End is how a call ended, by its terminal row's type (TypeHeld, TypeRefused, TypeSuperseded,
// TypeOutcomeUnknown, TypeNullModel), with the reason from the closed set and a detail. A
// completed call's end is Completed.
type End struct {
	Type, Reason, Detail string
}

// Row is the terminal row; the runner adds what the call's generation gathered (its turns,
// tokens, tree) before it appends it.
func (e End) Row() *Row { return &Row{Type: e.Type, Reason: e.Reason, Detail: e.Detail} }

// Held ends a call held for reason: a resume may run it again.
func Held(reason, detail string) *Row {
	return End{Type: TypeHeld, Reason: reason, Detail: detail}.Row()
}

// Refused ends a call refused for reason: nothing was sent, and a resume does not run it again.
func Refused(reason, detail string) *Row {
	return End{Type: TypeRefused, Reason: reason, Detail: detail}.Row()
}

// Completed is a completed call's answer: its output (the JSON the script gets), whether it was
// extracted from prose around it, and then the raw text it was extracted from.
type Completed struct {
	Output    json.RawMessage
	Extracted bool
	RawText   *string
}

// Row is the completed row.
func (c Completed) Row() *Row {
	return &Row{Type: TypeCompleted, Output: c.Output, Extracted: c.Extracted, RawText: c.RawText}
}
