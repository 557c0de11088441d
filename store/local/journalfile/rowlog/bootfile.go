package rowlog

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
)

// The boot file beside a log says the boot id its last writer recorded as it opened it, so
// that a reader of a log whose writer died need not scan every frame for its last boot frame
// (~100 MB for 100,000 calls, ~40 ms). A writer writes it, fsync'd, before its boot frame:
// whenever the log does not end in a checkpoint, the file says that frame's id, or a newer
// writer's whose open found the file sound in this boot (a rebuild ends in a checkpoint).
// A boot file missing, cut short or unreadable says nothing, and the log is scanned.

// bootFile is the boot file of the log at logPath.
func bootFile(logPath string) string { return logPath + ".boot" }

// BootFile is the boot file of the log at logPath, for those who list a run's files.
func BootFile(logPath string) string { return bootFile(logPath) }

// writeBoot writes boot to the boot file of the log at logPath, fsync'd (WriteOwnFile). Its
// directory entry is not: a boot file a crash lost says nothing.
func writeBoot(logPath, boot string) error {
	if err := WriteOwnFile(bootFile(logPath), []byte(boot+"\n")); err != nil {
		return fmt.Errorf("journal log: boot file of %s: %w", logPath, err)
	}
	return nil
}

// LastBoot is the boot id the last writer of the log at logPath recorded as it opened it: from
// its boot file, or from a scan of the log when that file says nothing.
func LastBoot(logPath string) (string, error) {
	if boot, ok := readBoot(logPath); ok {
		return boot, nil
	}
	st, err := ReadState(logPath)
	return st.Boot, err
}

// OpenedInThisBoot reports, from the boot file alone, whether the last writer of the log at
// logPath opened it in the machine's current boot: its bbolt file was then sound in this boot,
// and what was put in it since is in the page cache, not torn. False when the boot file says
// nothing or the kernel gives no boot id.
func OpenedInThisBoot(logPath string) bool {
	boot, ok := readBoot(logPath)
	now := BootID()
	return ok && now != "" && boot == now
}

// readBoot reads the boot file of the log at logPath: ok is false when it says nothing (none,
// not a regular file, or not one line of a boot id).
func readBoot(logPath string) (string, bool) {
	boot, _, ok := readBootFile(logPath)
	return boot, ok
}

// keptBoot reports whether the boot file of the log at logPath says boot, as a file of a
// writer's own making (one link to it, this user's, no access for others): a writer in that
// boot need not make it again.
func keptBoot(logPath, boot string) bool {
	was, own, ok := readBootFile(logPath)
	return ok && own && boot != "" && was == boot
}

// readBootFile is readBoot, and whether the file is as a writer makes it: one name, this
// user's, readable and writable by no one else.
func readBootFile(logPath string) (boot string, own, ok bool) {
	f, err := openRegular(bootFile(logPath), os.O_RDONLY|syscall.O_NOFOLLOW) // a link to elsewhere says nothing
	if err != nil {
		return "", false, false
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil {
		if st, isUnix := info.Sys().(*syscall.Stat_t); isUnix {
			own = st.Nlink == 1 && int(st.Uid) == os.Getuid() && info.Mode().Perm()&0o077 == 0
		}
	}
	var b [maxBootID + 2]byte
	n, _ := f.Read(b[:])
	line, found := bytes.CutSuffix(b[:n], []byte("\n"))
	if !found || bytes.ContainsAny(line, "\x00\n") {
		return "", false, false
	}
	return string(line), own, true
}
