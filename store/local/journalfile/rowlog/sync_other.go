//go:build !linux

package rowlog

import "os"

func fdatasync(f *os.File) error { return f.Sync() }

func preallocate(*os.File, int64, int64) {}
