package pablo

import (
	"errors"
	"strings"
	"testing"
)

// TestApprovalClassesOnlyAdd: options.approvals takes "required" and
// nothing else, so a deployment can add a question but never write one
// away; any other value, or an unknown class, is a config error naming the
// key.
func TestApprovalClassesOnlyAdd(t *testing.T) {
	for _, body := range []string{
		"[options.approvals]\nshell = \"never\"\n",
		"[options.approvals]\nshell = \"optional\"\n",
		"[options.approvals]\nfs_read = \"required\"\n",
		"[options.approvals]\nshell = true\n",
	} {
		_, err := loadString(t, "schema_version = 1\n"+body)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "approvals") {
			t.Errorf("%q: err %v, want a config error naming options.approvals", body, err)
		}
	}
	if _, err := loadString(t, "schema_version = 1\n[options.approvals]\nshell = \"required\"\nmcp = \"required\"\nsubagent = \"required\"\nfilesystem_write = \"required\"\n"); err != nil {
		t.Fatal(err)
	}
}
