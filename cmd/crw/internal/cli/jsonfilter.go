package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/itchyny/gojq"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/errs"
)

// jsonFlag is --json: alone (or =true) every field, =false none, =F1,F2 the fields named (gh's
// --json FIELDS, with = so that --json alone, followed by a run, keeps its meaning).
type jsonFlag struct {
	on     bool
	fields []string
}

var fieldName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (j *jsonFlag) String() string {
	if len(j.fields) > 0 {
		return strings.Join(j.fields, ",")
	}
	return fmt.Sprint(j.on)
}

func (j *jsonFlag) Type() string { return "fields" }

func (j *jsonFlag) Set(v string) error {
	switch v {
	case "true":
		j.on, j.fields = true, nil
		return nil
	case "false":
		j.on, j.fields = false, nil
		return nil
	}
	j.on, j.fields = true, nil
	for f := range strings.SplitSeq(v, ",") {
		f = strings.TrimSpace(f)
		if !fieldName.MatchString(f) {
			return fmt.Errorf("%q is not a field name (--json=FIELD,FIELD…)", f)
		}
		if !slices.Contains(j.fields, f) {
			j.fields = append(j.fields, f)
		}
	}
	return nil
}

// jsonFilter is standard output under --json=FIELDS or --jq: each line the command writes, one
// JSON value (a command's object, or a line of JSON Lines), is cut to the fields named and then
// given to the jq query. It is a pass-through until the command line asks for either, and for
// the error the root prints (raw): an error is shown whole.
type jsonFilter struct {
	w      io.Writer
	fields []string
	query  *gojq.Code
	raw    bool
	buf    []byte
	// seen are the fields some object of the output had; err the first failure of the query;
	// slip a field named that the first object lacks and that is a slip for one it has: then
	// nothing of the output is written, only the error.
	seen map[string]bool
	err  error
	slip error
}

func (f *jsonFilter) active() bool { return !f.raw && (len(f.fields) > 0 || f.query != nil) }

func (f *jsonFilter) Write(p []byte) (int, error) {
	if !f.active() {
		if err := f.flush(); err != nil {
			return 0, err
		}
		return f.w.Write(p)
	}
	f.buf = append(f.buf, p...)
	for {
		i := bytes.IndexByte(f.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := f.buf[:i]
		f.buf = f.buf[i+1:]
		if err := f.line(line); err != nil {
			return len(p), err
		}
	}
}

// flush writes what is left of a line that did not end.
func (f *jsonFilter) flush() error {
	if len(f.buf) == 0 {
		return nil
	}
	line := f.buf
	f.buf = nil
	if !f.active() {
		_, err := f.w.Write(line)
		return err
	}
	return f.line(line)
}

// line writes one line of the command's output, filtered. A line that is not JSON (an HTML
// page, say) has nothing to select and is written as it is.
func (f *jsonFilter) line(line []byte) error {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		_, werr := f.w.Write(append(line, '\n'))
		return werr
	}
	if f.slip != nil {
		return nil
	}
	if obj, ok := v.(map[string]any); ok && len(f.fields) > 0 {
		first := len(f.seen) == 0
		for k := range obj {
			f.seen[k] = true
		}
		if first {
			if f.slip = f.slipped(); f.slip != nil {
				return nil
			}
		}
		picked := make(map[string]any, len(f.fields))
		for _, name := range f.fields {
			picked[name] = obj[name] // absent: null, so that every line has the same shape
		}
		v = picked
	}
	if f.query == nil {
		return f.write(v, false)
	}
	iter := f.query.Run(v)
	for {
		out, ok := iter.Next()
		if !ok {
			return nil
		}
		if err, isErr := out.(error); isErr {
			var halt *gojq.HaltError
			if errors.As(err, &halt) && halt.Value() == nil {
				return nil
			}
			if f.err == nil {
				f.err = err
			}
			return nil
		}
		if err := f.write(out, true); err != nil {
			return err
		}
	}
}

// write writes v on a line: a string a query gives as it is (gh's --jq), anything else as JSON.
func (f *jsonFilter) write(v any, fromQuery bool) error {
	if s, ok := v.(string); ok && fromQuery {
		_, err := io.WriteString(f.w, s+"\n")
		return err
	}
	var b []byte
	var err error
	if fields, ok := v.(map[string]any); ok && !fromQuery && len(f.fields) > 0 {
		b, err = orderedObject(fields, f.fields)
	} else {
		b, err = cmdutil.MarshalJSON(v)
	}
	if err != nil {
		return err
	}
	_, err = f.w.Write(append(b, '\n'))
	return err
}

// orderedObject is obj's JSON with its members in the order --json named them.
func orderedObject(obj map[string]any, order []string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range order {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(k)
		val, err := cmdutil.MarshalJSON(obj[k])
		if err != nil {
			return nil, err
		}
		b.Write(key)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// done is what went wrong with the filters once the command wrote all it had: the query's
// failure, or a field named that no object of the output had and that is a slip for one they
// had (a field absent because it is empty this time is not: it is null).
func (f *jsonFilter) done() error {
	if err := f.flush(); err != nil {
		return err
	}
	if f.slip != nil {
		return f.slip
	}
	if f.err != nil {
		return errs.New(errs.InvalidRequest, "--jq: %v", f.err)
	}
	return f.slipped()
}

// slipped is the error of a field named that no object seen so far had and that is a slip for
// one they had; nil when there is none.
func (f *jsonFilter) slipped() error {
	if len(f.fields) == 0 || len(f.seen) == 0 {
		return nil
	}
	have := make([]string, 0, len(f.seen))
	for k := range f.seen {
		have = append(have, k)
	}
	slices.Sort(have)
	for _, name := range f.fields {
		if f.seen[name] {
			continue
		}
		if near := cmdutil.Similar(name, have); len(near) > 0 {
			return errs.New(errs.InvalidRequest, "--json: the output has no field %q; did you mean %s? (its fields: %s)",
				name, strings.Join(near, " or "), strings.Join(have, ", "))
		}
	}
	return nil
}

// compileJQ is the query of --jq.
func compileJQ(expr string) (*gojq.Code, error) {
	q, err := gojq.Parse(expr)
	if err != nil {
		return nil, errs.New(errs.InvalidRequest, "--jq %s: %v", expr, err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, errs.New(errs.InvalidRequest, "--jq %s: %v", expr, err)
	}
	return code, nil
}
