package loader

import (
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dop251/goja_nodejs/require"
)

const libPrefix = "crw:lib/"

// target is a resolved module.
type target struct {
	key  string // identity within one runtime
	name string // module name: a native name, crw:lib/<path>, or a path relative to the workflow folder
	file string // source name in errors and stacks: a real path, or crw:lib/<fs path> for a built-in
	kind sourceKind

	native require.ModuleLoader // set for a Go module

	builtin bool
	fsPath  string // path in Config.Builtin

	real string // real path of a disk file
	root string // the folder its relative imports must stay in
}

func (t *target) isDisk() bool { return t.native == nil && !t.builtin }

// resolve maps a specifier imported by from to a module. Resolutions are
// remembered so that every runtime of this Loader sees the same graph.
func (l *Loader) resolve(from *target, spec string) (*target, error) {
	key := from.key + "\x00" + spec
	l.mu.Lock()
	t := l.resolved[key]
	l.mu.Unlock()
	if t != nil {
		return t, nil
	}
	t, err := l.resolveUncached(from, spec)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.resolved[key] = t
	l.mu.Unlock()
	return t, nil
}

func (l *Loader) resolveUncached(from *target, spec string) (*target, error) {
	if ldr, ok := l.native[spec]; ok {
		return &target{key: "native:" + spec, name: spec, file: spec, native: ldr}, nil
	}
	if p, ok := strings.CutPrefix(spec, libPrefix); ok {
		return l.resolveLib(from, spec, p)
	}
	if isRelative(spec) {
		switch {
		case from.builtin:
			return l.resolveBuiltinRel(from, spec)
		case from.isDisk():
			return l.resolveRel(from, spec)
		}
	}
	return nil, l.unknown(from, spec, "")
}

func isRelative(spec string) bool {
	return spec == "." || spec == ".." || strings.HasPrefix(spec, "./") || strings.HasPrefix(spec, "../")
}

// resolveRel resolves a relative specifier of a disk module inside its
// root, both before and after symlinks are resolved.
func (l *Loader) resolveRel(from *target, spec string) (*target, error) {
	lex := filepath.Join(filepath.Dir(from.real), filepath.FromSlash(spec))
	if !within(from.root, lex) {
		return nil, l.outside(from, spec, lex)
	}
	for _, c := range candidates(lex, filepath.Join) {
		if !l.disk.isFile(c) {
			continue
		}
		real, err := l.disk.realPath(c)
		if err != nil {
			continue
		}
		if !within(from.root, real) {
			return nil, l.outside(from, spec, real)
		}
		kind, _ := kindOf(c)
		return l.fileTarget(real, kind), nil
	}
	return nil, errorf(CodeModuleNotFound, spec, from.file,
		"cannot find module %q imported by %s (no file %s with extension %s, nor a folder with an index file)",
		spec, from.file, lex, strings.Join(moduleExts, ", "))
}

// resolveBuiltinRel resolves a relative specifier of a built-in inside
// Config.Builtin.
func (l *Loader) resolveBuiltinRel(from *target, spec string) (*target, error) {
	lex := path.Join(path.Dir(from.fsPath), spec)
	if lex == ".." || strings.HasPrefix(lex, "../") {
		return nil, errorf(CodeModuleOutside, spec, from.file,
			"module %q imported by %s is outside the built-in library", spec, from.file)
	}
	for _, c := range candidates(lex, path.Join) {
		if fi, err := fs.Stat(l.builtin, c); err == nil && fi.Mode().IsRegular() {
			return builtinTarget(c), nil
		}
	}
	return nil, errorf(CodeModuleNotFound, spec, from.file,
		"cannot find module %q imported by %s in the built-in library", spec, from.file)
}

// resolveLib looks crw:lib/<p> up in every user lib dir (the first that
// has it wins) and in the built-ins. A name in both is a conflict: which
// one a workflow gets must not depend on a search order nobody sees.
func (l *Loader) resolveLib(from *target, spec, p string) (*target, error) {
	if p == "" || p == "." || p == ".." || path.Clean(p) != p || strings.HasPrefix(p, "../") ||
		path.IsAbs(p) || strings.Contains(p, `\`) {
		return nil, l.unknown(from, spec, "not a valid crw:lib path")
	}
	var user *target
	for _, dir := range l.libDirs {
		lex := filepath.Join(dir, filepath.FromSlash(p))
		for _, c := range candidates(lex, filepath.Join) {
			if !l.disk.isFile(c) {
				continue
			}
			real, err := l.disk.realPath(c)
			if err != nil {
				continue
			}
			if !within(dir, real) {
				return nil, errorf(CodeModuleOutside, spec, from.file,
					"module %q imported by %s resolves to %s, outside the lib folder %s", spec, from.file, real, dir)
			}
			kind, _ := kindOf(c)
			user = l.fileTarget(real, kind)
			break
		}
		if user != nil {
			break
		}
	}
	var builtin *target
	if l.builtin != nil {
		for _, c := range candidates(p, path.Join) {
			if fi, err := fs.Stat(l.builtin, c); err == nil && fi.Mode().IsRegular() {
				builtin = builtinTarget(c)
				break
			}
		}
	}
	switch {
	case user != nil && builtin != nil:
		return nil, errorf(CodeModuleConflict, spec, from.file,
			"module %q imported by %s is provided both by %s and by the built-in %s; rename the user module",
			spec, from.file, user.real, builtin.file)
	case user != nil:
		return user, nil
	case builtin != nil:
		return builtin, nil
	}
	return nil, l.unknown(from, spec, "")
}

// candidates lists the files a specifier may name, in the order tried:
// the name itself when it has a module extension (a TS author writes
// "./x.js" for x.ts), else the name with each extension, else an index
// file in the folder of that name.
func candidates(p string, join func(...string) string) []string {
	if _, ok := kindOf(p); ok {
		out := []string{p}
		ext := path.Ext(p)
		if ts, ok := map[string]string{".js": ".ts", ".mjs": ".mts", ".cjs": ".cts"}[ext]; ok {
			out = append(out, strings.TrimSuffix(p, ext)+ts)
		}
		return out
	}
	out := make([]string, 0, 2*len(moduleExts))
	for _, ext := range moduleExts {
		out = append(out, p+ext)
	}
	for _, ext := range moduleExts {
		out = append(out, join(p, "index"+ext))
	}
	return out
}

// fileTarget describes a disk file. Its root is the innermost of the
// workflow folder and the lib dirs that holds it; in a lib dir it is named
// crw:lib/<path> however it was reached, so a schema module is checked
// even when imported by a relative path.
func (l *Loader) fileTarget(real string, kind sourceKind) *target {
	root, lib := "", false
	if within(l.dir, real) {
		root = l.dir
	}
	for _, d := range l.libDirs {
		if within(d, real) && len(d) > len(root) {
			root, lib = d, true
		}
	}
	if root == "" {
		root = filepath.Dir(real)
	}
	rel := filepath.ToSlash(mustRel(root, real))
	name := rel
	if lib {
		name = libPrefix + modulePath(rel)
	}
	return &target{key: "file:" + real, name: name, file: real, kind: kind, real: real, root: root}
}

func builtinTarget(fsPath string) *target {
	kind, _ := kindOf(fsPath)
	return &target{
		key:     "builtin:" + fsPath,
		name:    libPrefix + modulePath(fsPath),
		file:    libPrefix + fsPath,
		kind:    kind,
		builtin: true,
		fsPath:  fsPath,
	}
}

// modulePath drops the extension and a final /index: x/index.ts is x.
func modulePath(rel string) string {
	rel = strings.TrimSuffix(rel, path.Ext(rel))
	if rel == "index" {
		return rel
	}
	return strings.TrimSuffix(rel, "/index")
}

// fileName is how a disk file is listed by Files: relative to the workflow
// folder, or crw:lib/<path> in a lib dir outside it.
func (l *Loader) fileName(real string) string {
	if within(l.dir, real) {
		return filepath.ToSlash(mustRel(l.dir, real))
	}
	for _, d := range l.libDirs {
		if within(d, real) {
			return libPrefix + filepath.ToSlash(mustRel(d, real))
		}
	}
	return filepath.ToSlash(real)
}

func (l *Loader) outside(from *target, spec, p string) *LoadError {
	what := "the workflow folder"
	if from.root != l.dir {
		what = "the lib folder"
	}
	return errorf(CodeModuleOutside, spec, from.file,
		"module %q imported by %s resolves to %s, outside %s %s", spec, from.file, p, what, from.root)
}

func (l *Loader) unknown(from *target, spec, why string) *LoadError {
	if why == "" {
		why = "only crw: modules and relative paths inside the workflow folder can be imported"
	}
	return errorf(CodeModuleUnknown, spec, from.file,
		"unknown module %q imported by %s: %s (known crw: modules: %s)", spec, from.file, why, l.knownNames())
}

// knownNames lists the names a workflow may import. It walks the lib dirs,
// which is fine on this error path only.
func (l *Loader) knownNames() string {
	seen := make(map[string]bool)
	for name := range l.native {
		seen[name] = true
	}
	add := func(rel string) {
		if _, ok := kindOf(rel); ok {
			seen[libPrefix+modulePath(rel)] = true
		}
	}
	if l.builtin != nil {
		_ = fs.WalkDir(l.builtin, ".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				add(p)
			}
			return nil
		})
	}
	for _, dir := range l.libDirs {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() && p != dir && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() {
				add(filepath.ToSlash(mustRel(dir, p)))
			}
			return nil
		})
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	const max = 40
	if len(names) > max {
		return strings.Join(names[:max], ", ") + fmt.Sprintf(" and %d more", len(names)-max)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// within reports whether p is root or below it; both must be clean and
// absolute.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func mustRel(root, p string) string {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return rel
}
