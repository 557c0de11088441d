package worker

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/store"
)

func TestParseOffers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   []string
		want Offers
	}{
		{[]string{"auto"}, Offers{Codex: true, AnyRepo: true, Clone: true}},
		{[]string{"clone", "codex"}, Offers{Codex: true, Clone: true}},
		{[]string{"codex"}, Offers{Codex: true}},
		{[]string{"repo:/src/app/", "repo:/src/lib"}, Offers{Repos: []string{"/src/app", "/src/lib"}}},
		{[]string{"repo:*", "codex"}, Offers{Codex: true, AnyRepo: true}},
		{nil, Offers{}},
	} {
		got, err := ParseOffers(tt.in)
		require.NoError(t, err, "%q", tt.in)
		assert.Equal(t, tt.want, got, "%q", tt.in)
	}
	for _, tt := range []struct {
		in   string
		says string
	}{
		{"repo:src/app", "absolute path of its top level"},
		{"repo:", "absolute path"},
		{"gpu", `"gpu" is not an offer`},
	} {
		_, err := ParseOffers([]string{tt.in})
		require.Error(t, err, tt.in)
		assert.Contains(t, err.Error(), tt.says, tt.in)
	}
}

// TestWhatAHostServes: a run on the fake backend without a repository needs nothing; an
// app-server run needs codex offered and found as the run names it; a run in a repository
// needs that repository offered and on this host with the commit its calls start from.
func TestWhatAHostServes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "a"), []byte("a"), 0o644))
	git("add", "a")
	git("commit", "-q", "-m", "a")
	head := git("rev-parse", "HEAD")
	fakeBin := filepath.Join(t.TempDir(), "codex")
	require.NoError(t, os.WriteFile(fakeBin, []byte("#!/bin/sh\n"), 0o755))

	plain := &store.Spec{Backend: "fake"}
	inRepo := &store.Spec{Backend: "fake", Repo: repo, HeadCommit: head}
	otherCommit := &store.Spec{Backend: "fake", Repo: repo, HeadCommit: strings.Repeat("1", 40)}
	elsewhere := &store.Spec{Backend: "fake", Repo: filepath.Join(repo, "gone"), HeadCommit: head}
	require.NoError(t, os.Mkdir(filepath.Join(repo, "sub"), 0o755))
	inside := &store.Spec{Backend: "fake", Repo: filepath.Join(repo, "sub"), HeadCommit: head}
	hostile := &store.Spec{Backend: "fake", Repo: repo, HeadCommit: "--output=" + filepath.Join(repo, "written")}
	codexRun := &store.Spec{Backend: "app-server", BackendOptions: map[string]string{"codex": fakeBin}}
	noCodex := &store.Spec{Backend: "app-server", BackendOptions: map[string]string{"codex": filepath.Join(repo, "no-codex")}}
	cloned := &store.Spec{Backend: "fake", Repo: filepath.Join(repo, "gone"), HeadCommit: head, RepoURL: "https://git.example/app.git"}
	for _, tt := range []struct {
		name   string
		offers Offers
		spec   *store.Spec
		says   string // "" serves
	}{
		{"a plain run, offered nothing", Offers{}, plain, ""},
		{"its repository, offered by name", Offers{Repos: []string{repo}}, inRepo, ""},
		{"its repository, repo:*", AutoOffers, inRepo, ""},
		{"a repository not offered", Offers{Repos: []string{"/src/other"}}, inRepo, "which this worker does not offer (--offers repo:/src/other)"},
		{"a commit the repository lacks", AutoOffers, otherCommit, "at commit 1111111111111111111111111111111111111111, which this host does not have"},
		{"a repository not on this host", AutoOffers, elsewhere, "which this host does not have"},
		{"a folder inside a repository", AutoOffers, inside, "which is no checkout's top level on this host"},
		{"a commit that reads as an option", AutoOffers, hostile, "which this host does not have"},
		{"codex, offered and found", Offers{Codex: true}, codexRun, ""},
		{"codex not offered", Offers{AnyRepo: true}, codexRun, "needs codex (the app-server backend), which this worker does not offer (--offers repo:*)"},
		{"codex offered, not on this host", AutoOffers, noCodex, "this host has none"},
		{"a repository elsewhere with a clone URL, clones offered", Offers{Clone: true}, cloned, ""},
		{"a repository elsewhere with a clone URL, clones not offered", Offers{AnyRepo: true}, cloned,
			", and it does not offer clones of its clone URL https://git.example/app.git"},
	} {
		got := tt.offers.Serves(ctx, tt.spec)
		if tt.says == "" {
			assert.Empty(t, got, tt.name)
		} else {
			assert.Contains(t, got, tt.says, tt.name)
		}
	}
	assert.NoFileExists(t, filepath.Join(repo, "written"), "a spec's commit is never an option to git")
}
