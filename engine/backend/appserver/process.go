package appserver

import (
	"context"
	"sync"

	"github.com/crw-dev/crw/engine/backend/codex"
)

// process is the backend's app server, and the threads it has loaded.
type process struct {
	*codex.Server

	mu     sync.Mutex
	loaded map[string]bool // threads this process has started, forked or resumed
}

// startProcess starts the backend's app server.
func startProcess(ctx context.Context, o *Options) (*process, error) {
	s, err := codex.StartServer(ctx, codex.ServerOptions{Codex: o.Codex, CodexHome: o.CodexHome, Log: o.Log,
		Client: codex.ClientOptions{Timeout: o.RequestTimeout, OnRequest: o.OnServerRequest}})
	if err != nil {
		return nil, err
	}
	return &process{Server: s, loaded: map[string]bool{}}, nil
}

func (p *process) isLoaded(threadID string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.loaded[threadID]
}

func (p *process) setLoaded(threadID string, loaded bool) {
	p.mu.Lock()
	if loaded {
		p.loaded[threadID] = true
	} else {
		delete(p.loaded, threadID)
	}
	p.mu.Unlock()
}
