package rowlog

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"syscall"
)

// PlayRestart makes the log at path read as a machine's restart leaves it, for the tests and
// the simulator that play one: the boot id its last writer recorded becomes another of the
// same length, in its last boot frame and its boot file (the machine has restarted since),
// and with torn > 0 an append that the power loss cut short follows its last frame: a header
// claiming torn bytes more than the few of its payload that reached the disk. A log its writer
// closed (State.Closed) had no append under way and its file lost nothing: it only has its
// boot id changed, and closed says so. It waits for the log's writer, if one still holds it,
// to let it go (a process the simulator killed closes it as it dies).
func PlayRestart(path string, torn int) (closed bool, err error) {
	f, err := openRegular(path, os.O_RDWR)
	if err != nil {
		return false, fmt.Errorf("journal log: %s: %w", path, err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return false, fmt.Errorf("journal log: %s: %w", path, err)
	}
	at, end, payload, closed, err := lastBoot(f)
	if err != nil {
		return false, fmt.Errorf("journal log: %s: %w", path, err)
	}
	for i := 2; i < 2+int(payload[1]); i++ {
		payload[i] = otherByte(payload[i])
	}
	frame := appendFrame(nil, payload)
	if _, err := f.WriteAt(frame, at); err != nil {
		return closed, err
	}
	if _, ok := readBoot(path); ok {
		if err := writeBoot(path, string(payload[2:2+int(payload[1])])); err != nil {
			return closed, err
		}
	}
	if torn > 0 && !closed {
		cut := binary.LittleEndian.AppendUint32(nil, uint32(torn+minRow+9))
		cut = binary.LittleEndian.AppendUint32(cut, 0x5eed)
		cut = append(cut, kindRows, 0xff, 0xff)
		if _, err := f.WriteAt(cut, end); err != nil {
			return closed, err
		}
	}
	return closed, f.Sync()
}

// lastBoot finds the last boot frame of the frames that read whole: its offset and payload,
// the offset past the last frame, and whether that frame is a checkpoint.
func lastBoot(f *os.File) (at, end int64, payload []byte, closed bool, err error) {
	b, err := os.ReadFile(f.Name())
	if err != nil {
		return 0, 0, nil, false, err
	}
	if len(b) < len(magic) || string(b[:len(magic)]) != magic {
		return 0, 0, nil, false, fmt.Errorf("%w: no %q at its start", ErrCorrupt, magic)
	}
	at = -1
	o := len(magic)
	for o+headerLen < len(b) {
		n := int(binary.LittleEndian.Uint32(b[o:]))
		if n == 0 || o+headerLen+n > len(b) {
			break
		}
		p := b[o+headerLen : o+headerLen+n]
		if crc32.Checksum(p, castagnoli) != binary.LittleEndian.Uint32(b[o+4:]) {
			break
		}
		if p[0] == kindBoot && len(p) >= 2 && len(p) >= 2+int(p[1]) {
			at, payload = int64(o), append([]byte(nil), p...)
		}
		closed = p[0] == kindCheckpoint
		o += headerLen + n
	}
	if at < 0 {
		return 0, 0, nil, false, fmt.Errorf("%w: no boot frame", ErrCorrupt)
	}
	return at, int64(o), payload, closed, nil
}

// otherByte is a printable byte other than c.
func otherByte(c byte) byte {
	if c == 'x' {
		return 'y'
	}
	return 'x'
}
