// Package killtest holds the crw command's crash and kill tiers: real crw processes ended at
// every journal commit and SIGKILLed at seeded instants, on scratch repositories and on one of
// 10,000 files, each run driven to its end and held to an uninterrupted one. They are a package
// of their own so that each test binary stays within go test's default time limit under -race.
package killtest
