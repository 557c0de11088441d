//go:build !race

package memtest_test

// raceDetector: the race detector is on; memory figures run higher under it.
const raceDetector = false
