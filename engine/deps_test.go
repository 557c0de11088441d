package engine_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crw-dev/crw/internal/depstest"
)

const module = "github.com/crw-dev/crw/"

// TestCoreImportsNoConcreteBackendOrStore: the engine core knows backends only through
// engine/backend and stores only through store; the command line builds the concrete ones.
func TestCoreImportsNoConcreteBackendOrStore(t *testing.T) {
	t.Parallel()
	forbidden := []string{
		module + "engine/backend/fake", module + "engine/backend/appserver", module + "internal/pulltest", module + "engine/backend/codex",
		module + "engine/backend/session", module + "store/local", module + "store/mem", "go.etcd.io/bbolt", module + "cmd",
	}
	rules := map[string][]string{}
	for _, pkg := range []string{"engine", "engine/runner", "engine/placer", "engine/offline", "engine/diagnosis", "engine/callstate", "engine/replay",
		"engine/shadow", "engine/inputs", "engine/result", "engine/backend", "engine/backend/pull", "store"} {
		rules[module+pkg] = forbidden
	}
	depstest.Forbid(t, rules)
}

// TestNoBackendImportsAnother: each concrete backend is built from the contract and the shared
// packages beneath it (engine/backend/codex, engine/backend/bound), never from another backend.
func TestNoBackendImportsAnother(t *testing.T) {
	t.Parallel()
	backends := []string{module + "engine/backend/fake", module + "engine/backend/appserver", module + "engine/backend/session"}
	rules := map[string][]string{}
	for _, pkg := range backends {
		for _, other := range backends {
			if other != pkg {
				rules[pkg] = append(rules[pkg], other)
			}
		}
	}
	depstest.Forbid(t, rules)
}

// TestPushBackendsDoNotImportPull: the pull contract (engine/backend/pull) is the pull backends'
// (the session backend, internal/pulltest) and the runner's that serves them: the core contract,
// the push backends (the fake, the App Server) and what the backends share beneath the contract
// are built without it.
func TestPushBackendsDoNotImportPull(t *testing.T) {
	t.Parallel()
	rules := map[string][]string{}
	for _, pkg := range []string{"engine/backend", "engine/backend/fake", "engine/backend/appserver", "engine/backend/codex", "engine/backend/bound"} {
		rules[module+pkg] = []string{module + "engine/backend/pull"}
	}
	depstest.Forbid(t, rules)
}

// TestTestKitsStayInTests: the test kits (internal/enginetest, internal/pulltest,
// internal/mockmodel, internal/depstest) are imported by tests alone, never by what crw is built
// from.
func TestTestKitsStayInTests(t *testing.T) {
	t.Parallel()
	for _, dep := range depstest.Deps(t, module+"cmd/crw") {
		for _, kit := range []string{"internal/enginetest", "internal/pulltest", "internal/mockmodel", "internal/depstest"} {
			assert.NotEqual(t, module+kit, dep, "crw is built with a test kit")
		}
	}
}

// TestCrwIsBuiltWithoutGRPC: crw speaks etcd's gRPC API with a client of its own
// (store/etcd/etcdrpc), not etcd's Go client: the gRPC and protobuf runtimes that client
// brings cost every crw process ~5 ms of its start in their package inits, a store on etcd or
// not. Tests may use etcd's client (internal/etcdtest's admin client); crw is never built with
// it.
func TestCrwIsBuiltWithoutGRPC(t *testing.T) {
	t.Parallel()
	depstest.Forbid(t, map[string][]string{module + "cmd/crw": {
		"google.golang.org/grpc", "google.golang.org/protobuf", "go.etcd.io/etcd/client/v3", "go.etcd.io/etcd/api/v3",
	}})
}
