package etcd

import "github.com/crw-dev/crw/store"

// AfterTxn has fn called after each commit transaction of l's journal that succeeded, with the
// last seq it wrote.
func AfterTxn(l store.Lease, fn func(last uint64)) { l.(*lease).h.j.afterTxn = fn }

// SetListPage makes List read n run ids at a time, until the test ends.
func SetListPage(t interface{ Cleanup(func()) }, n int64) {
	old := listPage
	listPage = n
	t.Cleanup(func() { listPage = old })
}

// SetMaxRow makes the largest row a journal takes n bytes, until the test ends.
func SetMaxRow(t interface{ Cleanup(func()) }, n int) {
	old := maxRow
	maxRow = n
	t.Cleanup(func() { maxRow = old })
}

// Under is under, for the tests of the keys a member may answer.
var Under = under
