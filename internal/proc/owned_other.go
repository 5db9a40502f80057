//go:build !linux

package proc

// BootID needs /proc: ErrUnsupportedPlatform outside Linux.
func BootID() (string, error) { return "", ErrUnsupportedPlatform }

// Identify needs /proc: ErrUnsupportedPlatform outside Linux.
func Identify(pid int, program string) (Group, error) { return Group{}, ErrUnsupportedPlatform }

// Survivors needs /proc: ErrUnsupportedPlatform outside Linux.
func Survivors(g Group) ([]Member, error) { return nil, ErrUnsupportedPlatform }

// Reap needs /proc: ErrUnsupportedPlatform outside Linux.
func Reap(g Group) ([]Member, error) { return nil, ErrUnsupportedPlatform }

// groupsIdentifiable says whether a group's identity can be read here.
const groupsIdentifiable = false
