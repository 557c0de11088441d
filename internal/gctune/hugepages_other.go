//go:build !linux

package gctune

func adviseHugePages(int) bool { return false }
