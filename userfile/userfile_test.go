package userfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadsARegularFileWithinTheLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(path, []byte(`{"a":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	data, err := Read(path, 7)
	if err != nil || string(data) != `{"a":1}` {
		t.Fatalf("Read = %q, %v; want the content", data, err)
	}
}

func TestRefusesAFileOverTheLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(path, []byte(`{"a":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Read(path, 6)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "7 bytes, the limit is 6") {
		t.Fatalf("Read over the limit = %v; want ErrTooLarge saying 7 bytes and the limit 6", err)
	}
}

func TestRefusesDevicesPipesAndDirectories(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"/dev/zero": "a device", fifo: "a named pipe", dir: "a directory"} {
		_, err := Read(path, MaxData)
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), want) {
			t.Errorf("Read(%s) = %v; want ErrNotRegular naming %s", path, err, want)
		}
	}
}

func TestMissingFileSaysSoWithoutThePath(t *testing.T) {
	_, err := Read(filepath.Join(t.TempDir(), "absent"), MaxData)
	if !errors.Is(err, os.ErrNotExist) || strings.Contains(err.Error(), "absent") {
		t.Fatalf("Read(absent) = %v; want ErrNotExist without the path", err)
	}
}
