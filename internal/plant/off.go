//go:build !crwplant

package plant

// On reports whether the bug named is planted: never, in a build without the crwplant tag.
func On(string) bool { return false }

// Enabled reports whether this build can plant bugs.
const Enabled = false

// Set plants the bugs named in this process; a build without the crwplant tag has none.
func Set(...string) {}
