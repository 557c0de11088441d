//go:build race

package main

// raceDetector: the race detector is on; a process's memory never comes back under it.
const raceDetector = true
