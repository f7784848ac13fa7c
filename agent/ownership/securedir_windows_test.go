//go:build windows

package ownership

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/windows"
)

// securityOf returns path's owner, DACL flags (e.g. "PAI") and ACEs in SDDL.
func securityOf(t *testing.T, path string) (owner, flags, aces string) {
	t.Helper()
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		t.Fatal(err)
	}
	o, d, _ := strings.Cut(sd.String(), "D:")
	i := strings.IndexByte(d, '(')
	if i < 0 {
		i = len(d)
	}
	return strings.TrimPrefix(o, "O:"), d[:i], d[i:]
}

// The ledger's folder, and the journal in it, are for SYSTEM and Administrators only: the grants
// ProgramData passes down to Users are cut, and so is the right of whoever created the folder.
func TestSecureLedgerDir(t *testing.T) {
	if !windows.GetCurrentProcessToken().IsElevated() {
		t.Skip("setting the owner to Administrators needs an elevated process, as the agent is")
	}
	dir := filepath.Join(t.TempDir(), "winproxy")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	before := filepath.Join(dir, "before")
	if err := os.WriteFile(before, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := SecureLedgerDir(dir); err != nil {
		t.Fatal(err)
	}
	if owner, flags, aces := securityOf(t, dir); owner != "BA" || !strings.Contains(flags, "P") || aces != "(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)" {
		t.Errorf("folder: owner %s, DACL %s%s; want %s", owner, flags, aces, ledgerDirSDDL)
	}
	l, err := OpenLedger(filepath.Join(dir, "owned.ledger"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, f := range []string{before, filepath.Join(dir, "owned.ledger")} {
		if _, _, aces := securityOf(t, f); aces != "(A;ID;FA;;;SY)(A;ID;FA;;;BA)" {
			t.Errorf("%s: DACL %s, want only the folder's two grants, inherited", f, aces)
		}
	}
	if err := SecureLedgerDir(before); err == nil {
		t.Error("a file was taken for the ledger's folder")
	}
}
