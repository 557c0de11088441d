package backend

import (
	"fmt"
	"sort"
	"strings"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
)

// Descriptor is a backend as the registry knows it: its name, the options a run gives it, how
// those are checked when a run is created, and how a process of the run builds it.
type Descriptor struct {
	Name    string
	Summary string   // one line for the command line's help
	Options []Option // each is also a flag of crw flow run and start: --<name>
	// Prerequisites say what a run of the backend needs of its host, each in a line that
	// names options by their names (none: it needs nothing). Prepare, with no options, tells
	// whether this host has them.
	Prerequisites []string
	// Prepare checks the options a run is created with and returns them as the run records
	// them (paths made absolute, a binary found). An error about an option is an errs.Field of
	// OptionField(its name).
	Prepare func(opts map[string]string) (map[string]string, error)
	// Open builds the backend for one process of a run.
	Open func(cfg Config) (Backend, error)
	// HostBound: a run of this backend lives partly in the state folder of the host it is
	// created on (a session run's steps, replies and owner binding), so on a store that hosts
	// share only that host goes on with it.
	HostBound bool
}

// Option is one option a backend takes.
type Option struct {
	Name  string
	Usage string
}

// OptionField is the field of the backend option name in an error about it (errs.FieldError):
// backend_opts.<name>.
func OptionField(name string) string { return "backend_opts." + name }

// Config is what a process of a run gives its backend.
type Config struct {
	Run     string
	Options map[string]string // as Prepare returned them
	Cwd     string            // where the run's threads work
	Env     map[string]string // the run's recorded environment, TMPDIR among it
	// Dir is a folder of this host that belongs to the run, for the host's own logs; "" when
	// the run has none.
	Dir string
	// Warn records a warning of the run that belongs to no call.
	Warn func(reason, detail string)
	// Report journals an event of the run that belongs to no call's turn (a wake, an
	// escalation).
	Report func(Event)
	// Process is this process's place among the run's processes: 1 for the first, n for the
	// one that writes the run's n-th started row.
	Process int
	// State is the state folder the run lives in ("" for a store without one), where the
	// owner bindings are; Roles are the run's role pairs, which its bindings carry.
	State string
	Roles map[string]journal.Pair
	// Live tells whether another run of the store is live: a process holds it, or its start
	// does (the state folder's start lock). An owner's binding to a live run stays in force.
	Live func(run string) bool
}

// Registry holds the backends a build of crw offers, by name. The command line builds it in
// one place; the engine knows backends only through it.
type Registry struct {
	byName map[string]*Descriptor
}

// NewRegistry registers ds; a name given twice, or a descriptor without Open, panics: that is
// a mistake of the build, not of a user.
func NewRegistry(ds ...Descriptor) *Registry {
	r := &Registry{byName: map[string]*Descriptor{}}
	for i := range ds {
		d := ds[i]
		if d.Name == "" || d.Open == nil || r.byName[d.Name] != nil {
			panic(fmt.Sprintf("backend: bad or duplicate descriptor %q", d.Name))
		}
		r.byName[d.Name] = &d
	}
	return r
}

// Names lists the registered backends, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.byName))
	for n := range r.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Options lists every option of every backend, sorted by name, each once.
func (r *Registry) Options() []Option {
	seen := map[string]bool{}
	var out []Option
	for _, n := range r.Names() {
		for _, o := range r.byName[n].Options {
			if !seen[o.Name] {
				seen[o.Name] = true
				out = append(out, o)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup finds a backend by name; an unknown one is invalid_request about the field backend,
// listing those there are.
func (r *Registry) Lookup(name string) (*Descriptor, error) {
	if d := r.byName[name]; d != nil {
		return d, nil
	}
	return nil, errs.Field("backend", fmt.Sprintf("%q", name), "not a backend of this build (one of %s)", strings.Join(r.Names(), ", "))
}

// Prepare checks the options a run of backend name is created with. An option the backend does
// not take is refused, naming the backends that do.
func (r *Registry) Prepare(name string, opts map[string]string) (map[string]string, error) {
	d, err := r.Lookup(name)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !takes(d, k) {
			e := errs.Field(OptionField(k), "", "%s, not of backend %s", r.takenBy(k), name)
			if by := r.takers(k); len(by) > 0 {
				// The backend meant is most often the one that takes it: say so first.
				next := make([]string, len(by))
				for i, b := range by {
					next[i] = "{backend} " + b
				}
				takes := ", which takes it"
				if len(by) > 1 {
					takes = ", which take it"
				}
				e = e.NextNaming(strings.Join(next, " or ") + takes + "; else leave it out")
			}
			return nil, e
		}
	}
	if d.Prepare == nil {
		return opts, nil
	}
	return d.Prepare(opts)
}

// Open builds backend name for one process of a run.
func (r *Registry) Open(name string, cfg Config) (Backend, error) {
	d, err := r.Lookup(name)
	if err != nil {
		return nil, err
	}
	if cfg.Warn == nil {
		cfg.Warn = func(string, string) {}
	}
	if cfg.Report == nil {
		cfg.Report = func(Event) {}
	}
	if cfg.Process < 1 {
		cfg.Process = 1
	}
	if cfg.Live == nil {
		// Without a way to tell, every run is taken to be live: nothing it holds is taken from it.
		cfg.Live = func(string) bool { return true }
	}
	return d.Open(cfg)
}

func takes(d *Descriptor, option string) bool {
	for _, o := range d.Options {
		if o.Name == option {
			return true
		}
	}
	return false
}

// takers are the backends that take an option, by name.
func (r *Registry) takers(option string) []string {
	var by []string
	for _, n := range r.Names() {
		if takes(r.byName[n], option) {
			by = append(by, n)
		}
	}
	return by
}

// takenBy names the backends that take an option: "an option of backend fake".
func (r *Registry) takenBy(option string) string {
	by := r.takers(option)
	if len(by) == 0 {
		return "an option of no backend"
	}
	return "an option of backend " + strings.Join(by, " or ")
}
