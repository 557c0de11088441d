package loader

import (
	"strings"
	"testing"
)

func TestNestingRefusesDeepSources(t *testing.T) {
	n := 100_000
	tests := map[string]string{
		"brackets":          strings.Repeat("[", n) + strings.Repeat("]", n),
		"parentheses":       strings.Repeat("(", n) + "1" + strings.Repeat(")", n),
		"object literals":   strings.Repeat("{a:", n) + "1" + strings.Repeat("}", n),
		"unary chain":       strings.Repeat("!", n) + "x",
		"spaced unary":      strings.Repeat("- ", n) + "x",
		"arrow chain":       strings.Repeat("a=>", n) + "1",
		"conditional chain": strings.Repeat("a?1:", n) + "0",
		"templates":         strings.Repeat("`${", n) + "1" + strings.Repeat("}`", n),
		"call chain":        "f" + strings.Repeat("()", n),
		"member chain":      "a" + strings.Repeat(".b", n),
		"binary chain":      "1" + strings.Repeat("+1", n),
		"assignment chain":  strings.Repeat("a=", n) + "1",
		"else-if chain":     "if(x){}" + strings.Repeat("else if(x){}", n),
		"typeof chain":      strings.Repeat("typeof ", n) + "x",
		"chain over lines":  strings.Repeat("x\n?1:", n) + "0",
		"async arrows":      strings.Repeat("async a=>", n) + "1",
		// A line comment ends at CR, U+2028 and U+2029 too: what follows is code.
		"after a comment ended by CR":     "0; //x\r" + strings.Repeat("(", n) + "1" + strings.Repeat(")", n),
		"after a comment ended by U+2028": "0; //x\u2028" + strings.Repeat("(", n) + "1" + strings.Repeat(")", n),
		"after a comment ended by U+2029": "0; //x\u2029" + strings.Repeat("(", n) + "1" + strings.Repeat(")", n),
		// "of" and "await" may be names: the slash after them may be a division.
		"division after of":   "of /" + strings.Repeat("(", n) + "1" + strings.Repeat(")", n) + "/ 1",
		"division in a class": "await /[ " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n) + " ]/ 1",
		"groups of a regexp":  "/" + strings.Repeat("(", n) + "a" + strings.Repeat(")", n) + "/",
		"escapes of a regexp": "/" + strings.Repeat("\\(", n) + "/",
	}
	for name, body := range tests {
		t.Run(name, func(t *testing.T) {
			src := "const v = " + body + ";"
			le := checkNesting("wf.js", "./wf.js", []byte(src))
			if le == nil {
				t.Fatal("a source nested 100,000 levels was accepted")
			}
			if le.Code != CodeTooDeep || le.File != "wf.js" || le.Line < 1 || le.Column < 1 ||
				!strings.Contains(le.Message, "nests more than 2000 levels") {
				t.Fatalf("error = %+v; want too_deep at a position in wf.js", le)
			}
		})
	}
}

func TestNestingAcceptsOrdinarySources(t *testing.T) {
	n := 5000
	tests := map[string]string{
		"brackets in strings":     `const s = "` + strings.Repeat("(", n) + `" + '` + strings.Repeat("[", n) + `';`,
		"brackets in comments":    "// " + strings.Repeat("{", n) + "\n/* " + strings.Repeat("(", n) + " */ const a = 1;",
		"brackets in regexps":     strings.Repeat("const r = /[(]\\(/g;\n", n),
		"brackets in templates":   "const t = `" + strings.Repeat("((", n) + "${1}" + strings.Repeat("[", n) + "`;",
		"statements without ;":    strings.Repeat("x = a + b\n", n),
		"function declarations":   strings.Repeat("function f() { return 1 }", n),
		"if statements":           strings.Repeat("if (a) { b() }\n", n),
		"method calls":            strings.Repeat("console.log(a.b.c(d), e);", n),
		"a long array":            "const a = [" + strings.Repeat("-1, ", n) + "];",
		"a long object":           "const o = {" + strings.Repeat("a: !b, ", n) + "};",
		"nesting at the limit":    strings.Repeat("[", 1990) + strings.Repeat("]", 1990),
		"division, not a regexp":  strings.Repeat("x = a / b / c;", n),
		"increments then regexps": strings.Repeat("i++;\n/[(]/.test(s)\n", n),
	}
	for name, src := range tests {
		t.Run(name, func(t *testing.T) {
			if le := checkNesting("wf.js", "./wf.js", []byte(src)); le != nil {
				t.Fatalf("an ordinary source was refused: %v", le)
			}
		})
	}
}

func TestNestingErrorPointsAtTheLine(t *testing.T) {
	src := "const a = 1;\n// é\nconst é = " + strings.Repeat("[", 3000) + strings.Repeat("]", 3000) + ";\n"
	le := checkNesting("wf.js", "./wf.js", []byte(src))
	// The assignment is a level: the 2,000th bracket, at column 10+2000, is one too many.
	if le == nil || le.Line != 3 || le.Column != 10+2000 {
		t.Fatalf("error = %+v; want line 3, column 2010 (the 2,000th bracket)", le)
	}
}

// CheckNesting is the same bound for a source built at run time: it reports the position and
// the limit, and passes what a module may hold.
func TestCheckNestingOfRuntimeSource(t *testing.T) {
	err := CheckNesting("1;\n(" + strings.Repeat("[", 3000) + ")")
	if err == nil || err.Line != 2 || err.Column != 2001 ||
		!strings.Contains(err.Error(), "nests more than 2000 levels deep") || !strings.Contains(err.Error(), "(line 2, column 2001)") {
		t.Fatalf("error = %v; want line 2, column 2001 and the limit", err)
	}
	if err := CheckNesting("return a + b"); err != nil {
		t.Fatalf("an ordinary body was refused: %v", err)
	}
}
