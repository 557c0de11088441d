package schema

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
)

// The cache keeps what is in use and holds a bounded number of schemas, of a bounded
// weight: a schema built for every call, or a large one, does not make it grow.
func TestCacheBounds(t *testing.T) {
	var c cache
	kept := func() int { return len(c.cur) + len(c.old) }
	inUse := []byte(obj("a"))
	first := c.get(inUse)
	for i := range 3 * cacheEntries {
		c.get(fmt.Appendf(nil, `{"type":"object","properties":{"v":{"enum":["x%d"]}}}`, i))
		if got := c.get(inUse); got != first {
			t.Fatalf("after %d other schemas the one in use was read again", i+1)
		}
		if kept() > 2*cacheEntries {
			t.Fatalf("%d schemas kept", kept())
		}
	}

	// A schema heavier than maxEntryWeight is read at each use, not kept.
	heavy := []byte(`{"type":"object","properties":{"c":{"const":[` + strings.Repeat("0,", maxEntryWeight/nodeWeight) + `0]}}}`)
	if a, b := c.get(heavy), c.get(heavy); a == b {
		t.Error("a heavy schema was kept")
	}
	// Generations are bounded by weight too.
	medium := maxEntryWeight / nodeWeight / 2
	for i := range 3 * cacheWeight / maxEntryWeight {
		c.get([]byte(`{"type":"object","properties":{"c":{"const":[` + strings.Repeat("0,", medium) + fmt.Sprint(i) + `]}}}`))
		if c.curWeight > cacheWeight {
			t.Fatalf("a generation weighs %d, more than %d", c.curWeight, cacheWeight)
		}
	}
}

// Load reads a text once, whoever asks, and what it gives does not change when the
// caller's bytes do; the verdict given to one caller is not changed by another.
func TestLoadOnce(t *testing.T) {
	raw := []byte(`{"type":"object","properties":{"v":{"enum":["a"]}},"required":["v"],"additionalProperties":true}`)
	s := Load(raw)
	if Load(raw) != s {
		t.Fatal("the same text read twice")
	}
	want := s.Digest()
	vs, err := s.CheckStrict()
	if err != nil || len(vs) != 1 || vs[0].Rule != RuleAdditionalProperties {
		t.Fatalf("CheckStrict = %v, %v", vs, err)
	}
	vs[0].Rule = "changed"
	if again, _ := CheckStrict(raw); again[0].Rule != RuleAdditionalProperties {
		t.Errorf("a caller changed the cached verdict: %v", again)
	}
	copy(raw[len(raw)-5:], "false")
	if got := Load(raw); got == s {
		t.Error("another text gave the same schema")
	}
	if s.Digest() != want {
		t.Error("the digest changed with the caller's bytes")
	}

	// Text that is not JSON is digested as it is, from a copy.
	bad := []byte("not json, once")
	notJSON := Load(bad)
	copy(bad, "NOT")
	if got, want := notJSON.Digest(), "sha256:"+fmt.Sprintf("%x", sha256.Sum256([]byte("not json, once"))); got != want {
		t.Errorf("the digest of text that is not JSON is %s, want %s", got, want)
	}
}
