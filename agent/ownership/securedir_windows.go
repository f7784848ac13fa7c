//go:build windows

package ownership

import (
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// ledgerDirSDDL gives SYSTEM and the Administrators group full control of the
// ledger's folder and of everything in it, and nobody else any access. The
// DACL is protected, so that the grants to Users that %ProgramData%
// passes down do not apply; the owner is set to Administrators, so that a
// user who created the folder first does not keep the owner's right to
// change its DACL back.
const ledgerDirSDDL = "O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"

// SecureLedgerDir restricts dir, the folder of the ledger, to SYSTEM and
// Administrators: whoever can write the ledger decides what the agent may
// delete. The DACL is inherited by the files already in dir and by those
// created later (the journal's compactions create a new file). A link or
// junction is refused rather than followed to a folder someone else chose.
func SecureLedgerDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Type() != fs.ModeDir {
		return fmt.Errorf("state directory %s is not a plain directory (a link or a junction?); refusing to keep the ledger there", dir)
	}
	sd, err := windows.SecurityDescriptorFromString(ledgerDirSDDL)
	if err != nil {
		return err
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return err
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return err
	}
	const info = windows.OWNER_SECURITY_INFORMATION | windows.DACL_SECURITY_INFORMATION | windows.PROTECTED_DACL_SECURITY_INFORMATION
	if err := windows.SetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT, info, owner, nil, dacl, nil); err != nil {
		return fmt.Errorf("restricting %s to SYSTEM and Administrators: %w", dir, err)
	}
	return nil
}
