package fake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/userfile"
)

// Answers is a parsed answers file: {"answers": [{"match": {...}, "turns": [TURN, ...]}, ...]}.
type Answers struct {
	Entries []Entry `json:"answers"`
}

// Entry scripts the turns of the calls it matches.
type Entry struct {
	Match Match  `json:"match"`
	Turns []Turn `json:"turns"`
}

// Match selects calls; a field that is absent matches any call.
type Match struct {
	Role *string `json:"role,omitempty"`
	Node *string `json:"node,omitempty"`
	Call *int    `json:"call,omitempty"` // 1-based issue order
	// NodeCall and RoleCall are the 1-based issue order among the calls of the call's node,
	// and of its role: unlike Call, untouched by how other nodes' calls interleave.
	NodeCall *int `json:"node_call,omitempty"`
	RoleCall *int `json:"role_call,omitempty"`
	// Prompt is a substring of the call's prompt (its task, on the repair turn too);
	// PromptRegex a Go regular expression it must match.
	Prompt      *string `json:"prompt,omitempty"`
	PromptRegex *string `json:"prompt_regex,omitempty"`

	re *regexp.Regexp // PromptRegex compiled, once, when the file is read
}

// Query is what a call shows an entry's match: see backend.Call.
type Query struct {
	Call, NodeCall, RoleCall int
	Role, Node               string
	Prompt                   string // the call's task
}

func (m *Match) matches(q Query) bool {
	return (m.Role == nil || *m.Role == q.Role) &&
		(m.Node == nil || *m.Node == q.Node) &&
		(m.Call == nil || *m.Call == q.Call) &&
		(m.NodeCall == nil || *m.NodeCall == q.NodeCall) &&
		(m.RoleCall == nil || *m.RoleCall == q.RoleCall) &&
		(m.Prompt == nil || strings.Contains(q.Prompt, *m.Prompt)) &&
		(m.re == nil || m.re.MatchString(q.Prompt))
}

// TokenCounts is a TURN's token figures.
type TokenCounts struct {
	Input           int64 `json:"input"`
	CachedInput     int64 `json:"cached_input,omitempty"`
	Output          int64 `json:"output"`
	ReasoningOutput int64 `json:"reasoning_output,omitempty"`
}

// Turn is one scripted turn: exactly one of JSON, Text, Error or Lost.
type Turn struct {
	JSON    json.RawMessage `json:"json,omitempty"`
	Text    *string         `json:"text,omitempty"`
	Error   *string         `json:"error,omitempty"`
	Lost    bool            `json:"lost,omitempty"`
	DelayMS int64           `json:"delay_ms,omitempty"`
	Tokens  *TokenCounts    `json:"tokens,omitempty"`
	// Files are written into the call's directory P before the turn answers: a path relative
	// to P and its content, or null to delete it. Commit then commits P's tree on P's HEAD, as
	// an executor that runs git commit itself would.
	Files  map[string]*string `json:"files,omitempty"`
	Commit bool               `json:"commit,omitempty"`
}

// MaxFiles bounds the files one turn writes.
const MaxFiles = 4096

// FileError is a malformed answers file: which file, which field, what is wrong.
type FileError struct {
	File  string
	Field string
	Msg   string
}

func (e *FileError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.File, e.Field, e.Msg)
}

// MaxPromptRegex bounds a match's prompt_regex, in bytes: RE2 matches in linear time, but a
// long expression compiles to a large program that every call runs.
const MaxPromptRegex = 4096

// maxDelayMS bounds a turn's delay: a day, and no overflow of a time.Duration.
const maxDelayMS = 24 * 60 * 60 * 1000

// LoadAnswers reads and checks an answers file.
func LoadAnswers(path string) (*Answers, error) {
	data, err := userfile.Read(path, userfile.MaxData)
	if err != nil {
		return nil, &FileError{File: path, Msg: fmt.Sprintf("cannot read: %v", err)}
	}
	return ParseAnswers(path, data)
}

// ParseAnswers checks an answers file's content; name is used in errors.
func ParseAnswers(name string, data []byte) (*Answers, error) {
	fail := func(field, format string, args ...any) error {
		return &FileError{File: name, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	var top map[string]json.RawMessage
	if err := strictDecode(data, &top); err != nil {
		return nil, fail("", "not a JSON object: %v", err)
	}
	for k := range top {
		if k != "answers" {
			return nil, fail(k, "unknown field (the file has one field, \"answers\")")
		}
	}
	rawList, ok := top["answers"]
	if !ok {
		return nil, fail("answers", "missing")
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(rawList, &entries); err != nil || entries == nil {
		return nil, fail("answers", "must be an array")
	}
	a := &Answers{Entries: make([]Entry, len(entries))}
	for i, raw := range entries {
		at := fmt.Sprintf("answers[%d]", i)
		var e struct {
			Match json.RawMessage   `json:"match"`
			Turns []json.RawMessage `json:"turns"`
		}
		if err := strictDecode(raw, &e); err != nil {
			return nil, fail(at, "%v", err)
		}
		if e.Match != nil {
			if field, problem := parseMatch(e.Match, &a.Entries[i].Match); problem != "" {
				return nil, fail(at+".match"+field, "%s", problem)
			}
		}
		if e.Turns == nil {
			return nil, fail(at+".turns", "missing: list the turns of the matched calls")
		}
		// An empty list stays a list: the matched calls have no scripted turn.
		a.Entries[i].Turns = make([]Turn, 0, len(e.Turns))
		for k, rt := range e.Turns {
			tat := fmt.Sprintf("%s.turns[%d]", at, k)
			var t Turn
			if err := strictDecode(rt, &t); err != nil {
				return nil, fail(tat, "%v (a turn takes json, text, error, lost, delay_ms, tokens, files, commit)", err)
			}
			kinds := 0
			if t.JSON != nil {
				kinds++
			}
			if t.Text != nil {
				kinds++
			}
			if t.Error != nil {
				kinds++
			}
			if t.Lost {
				kinds++
			}
			if kinds != 1 {
				return nil, fail(tat, "needs exactly one of json, text, error or lost")
			}
			if t.DelayMS < 0 {
				return nil, fail(tat+".delay_ms", "must not be negative")
			}
			if t.DelayMS > maxDelayMS {
				return nil, fail(tat+".delay_ms", "must be at most %d (a day)", maxDelayMS)
			}
			if t.Tokens != nil && (t.Tokens.Input < 0 || t.Tokens.Output < 0 || t.Tokens.CachedInput < 0 || t.Tokens.ReasoningOutput < 0) {
				return nil, fail(tat+".tokens", "counts must not be negative")
			}
			if t.Tokens != nil && (t.Tokens.Input > journal.MaxTokens || t.Tokens.Output > journal.MaxTokens ||
				t.Tokens.CachedInput > journal.MaxTokens || t.Tokens.ReasoningOutput > journal.MaxTokens) {
				return nil, fail(tat+".tokens", "counts must be at most %d", journal.MaxTokens)
			}
			if len(t.Files) > MaxFiles {
				return nil, fail(tat+".files", "writes %d files; the limit is %d", len(t.Files), MaxFiles)
			}
			for path := range t.Files {
				if problem := filePathProblem(path); problem != "" {
					return nil, fail(fmt.Sprintf("%s.files[%q]", tat, path), "%s", problem)
				}
			}
			if (t.Files != nil || t.Commit) && (t.Lost || t.Error != nil) {
				return nil, fail(tat, "files and commit go with an answer (json or text), not with error or lost")
			}
			a.Entries[i].Turns = append(a.Entries[i].Turns, t)
		}
	}
	return a, nil
}

// parseMatch reads an entry's match; problem is "" when it is well formed, else what is wrong
// with which field (".call", or "" for the match as a whole).
func parseMatch(data []byte, m *Match) (field, problem string) {
	bad := func(field, format string, args ...any) (string, string) {
		return field, fmt.Sprintf(format, args...)
	}
	if err := strictDecode(data, m); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if te.Field == "" {
				return bad("", "must be an object, not a JSON %s", te.Value)
			}
			return bad("."+te.Field, "must be %s, not a JSON %s", matchFieldType(te.Field), te.Value)
		}
		return bad("", "%v (match takes role, node, call, node_call, role_call, prompt and prompt_regex)", err)
	}
	for _, c := range []struct {
		name string
		n    *int
		what string
	}{
		{"call", m.Call, "the order in which the script issued the call"},
		{"node_call", m.NodeCall, "the nth call of the call's node, in the order the script issued them"},
		{"role_call", m.RoleCall, "the nth call of the call's role, in the order the script issued them"},
	} {
		if c.n != nil && *c.n < 1 {
			return bad("."+c.name, "must be 1 or more (%s), got %d", c.what, *c.n)
		}
	}
	if m.PromptRegex != nil {
		if len(*m.PromptRegex) > MaxPromptRegex {
			return bad(".prompt_regex", "is %d bytes long; the limit is %d", len(*m.PromptRegex), MaxPromptRegex)
		}
		re, err := regexp.Compile(*m.PromptRegex)
		if err != nil {
			return bad(".prompt_regex", "not a Go regular expression: %v", err)
		}
		m.re = re
	}
	return "", ""
}

// matchFieldType says what JSON a match field takes.
func matchFieldType(field string) string {
	switch field {
	case "call", "node_call", "role_call":
		return "a whole number"
	}
	return "a string"
}

func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("text after the JSON value")
	}
	return nil
}

// Find returns the scripted turn k (1-based) of a call: the first entry whose match fields all
// hold for the call; nil when no entry matches or the entry has fewer turns.
func (a *Answers) Find(q Query, k int) *Turn {
	if a == nil {
		return nil
	}
	for i := range a.Entries {
		if !a.Entries[i].Match.matches(q) {
			continue
		}
		if k > len(a.Entries[i].Turns) {
			return nil
		}
		return &a.Entries[i].Turns[k-1]
	}
	return nil
}

// filePathProblem says what is wrong with a path a turn writes, "" when nothing is: it must
// name a file inside P, relative, in clean form, and not in git's own folder.
func filePathProblem(path string) string {
	switch {
	case path == "":
		return "is empty"
	case len(path) > 1024:
		return "is longer than 1024 bytes"
	case filepath.IsAbs(path) || strings.HasPrefix(path, "/"):
		return "must be relative to the call's directory"
	case filepath.ToSlash(filepath.Clean(path)) != path:
		return "must be in clean form (no ., .., // or trailing /)"
	case path == ".." || strings.HasPrefix(path, "../"):
		return "leaves the call's directory"
	case strings.ContainsRune(path, 0):
		return "holds a NUL byte"
	}
	for _, part := range strings.Split(path, "/") {
		if strings.EqualFold(part, ".git") {
			return "is inside .git"
		}
	}
	return ""
}
