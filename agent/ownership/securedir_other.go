//go:build !windows

package ownership

// SecureLedgerDir restricts the ledger's folder on Windows; elsewhere the
// agent runs only against the simulator, whose files the user's own umask
// and the 0600 journal protect.
func SecureLedgerDir(string) error { return nil }
