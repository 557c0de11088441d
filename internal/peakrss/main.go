// Command peakrss runs a command and writes its wall time and peak resident memory to file
// descriptor 3, as "wall_ns max_rss_bytes", its standard streams and exit code the command's.
//
// It is for the benchmarks that measure crw as a whole process. The peak a parent reads from
// wait4 for a child it started counts the memory of the process the child was until it called
// exec: Go starts a child with vfork (CLONE_VM), and the kernel carries the mapping's high
// water mark across exec, so a 30 MB benchmark process made every child it started read as at
// least 30 MB. Started from this small program, a child's peak is its own.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: peakrss COMMAND [ARG...] (figures to file descriptor 3)")
		os.Exit(2)
	}
	figures := os.NewFile(3, "figures")
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		fmt.Fprintln(os.Stderr, "peakrss:", err)
		os.Exit(2)
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	if _, err := fmt.Fprintf(figures, "%d %d\n", wall.Nanoseconds(), rss); err != nil {
		fmt.Fprintln(os.Stderr, "peakrss: file descriptor 3:", err)
		os.Exit(2)
	}
	os.Exit(cmd.ProcessState.ExitCode())
}
