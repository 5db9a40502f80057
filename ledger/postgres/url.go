package postgres

import (
	"errors"
	"net/url"
	"strings"
)

// ErrURL: the store URL is not one this package accepts. A URL that carries
// a password matches [ErrPasswordInURL] too.
var ErrURL = errors.New("ledger/postgres: bad store URL")

// ErrPasswordInURL: the store URL carries a password. The password must
// come from PGPASSFILE or PGPASSWORD (libpq's own sources, which pgx
// honours), or from a credential for the ledger.store consumer: a URL ends
// up in shell history, process listings and error messages.
var ErrPasswordInURL = errors.New("ledger/postgres: store URL carries a password")

// URLError reports a store URL that was refused. It never holds the URL,
// its user information or a password: Reason says what to change.
type URLError struct {
	Reason   string
	Password bool // the URL carried a password
}

func (e *URLError) Error() string { return "ledger/postgres: store URL: " + e.Reason }

// Is matches ErrURL, and ErrPasswordInURL when the URL carried a password.
func (e *URLError) Is(target error) bool {
	return target == ErrURL || (target == ErrPasswordInURL && e.Password)
}

// IsURL reports whether s names a PostgreSQL store (a postgres:// or
// postgresql:// URL) rather than a file path.
func IsURL(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	if !ok {
		return false
	}
	scheme = strings.ToLower(scheme)
	return scheme == "postgres" || scheme == "postgresql"
}

// connKeywords are libpq's connection keywords that can begin a key=value
// connection string.
var connKeywords = []string{"host", "hostaddr", "port", "dbname", "user", "password", "passfile",
	"sslmode", "sslpassword", "sslcert", "sslkey", "sslrootcert", "connect_timeout", "service",
	"application_name", "options", "target_session_attrs"}

// IsConnectionString reports whether s is meant for a database rather than
// a file path, though it may not be an admissible store URL: a postgres://
// URL, anything holding "://" (a misspelt scheme, a URL after a space), or
// a libpq key=value connection string (its first word one of libpq's
// keywords followed by "="). A store value for which it is true goes to
// [CheckURL], never to a file: a file of that name would keep whatever
// password the string carries.
func IsConnectionString(s string) bool {
	if IsURL(s) || strings.Contains(s, "://") {
		return true
	}
	key, _, ok := strings.Cut(strings.TrimLeft(s, " \t\r\n"), "=")
	if !ok {
		return false
	}
	key = strings.ToLower(strings.TrimSpace(key))
	for _, k := range connKeywords {
		if key == k {
			return true
		}
	}
	return false
}

// maxURL bounds a store URL.
const maxURL = 4096

// CheckURL admits a store URL: a postgres:// or postgresql:// URL of at most
// 4096 bytes with no password, neither in its user information nor in a
// password query parameter. It does not connect. The error is a
// [*URLError] that never repeats the URL.
func CheckURL(s string) error {
	if len(s) > maxURL {
		return &URLError{Reason: "longer than 4096 bytes"}
	}
	if !IsURL(s) {
		return &URLError{Password: strings.Contains(strings.ToLower(s), "password"), Reason: "must start with postgres:// or postgresql:// (a key=value connection string is not accepted)"}
	}
	if strings.ContainsAny(s, "\x00\r\n") {
		return &URLError{Reason: "contains a NUL or line break"}
	}
	u, err := url.Parse(s)
	if err != nil {
		// url.Error repeats the URL: say only what kind of fault it is.
		return &URLError{Reason: "does not parse as a URL (check its escaping: a literal %, @ or / in a name must be percent-encoded)"}
	}
	if _, ok := u.User.Password(); ok {
		return &URLError{Password: true, Reason: "carries a password; remove it and supply it through PGPASSFILE or PGPASSWORD, or a credential for the ledger.store consumer"}
	}
	if u.Opaque != "" {
		return &URLError{Reason: "must be of the form postgres://[user@]host[:port]/database[?options]"}
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return &URLError{Reason: "its query does not parse (check the escaping of its options)"}
	}
	for k := range q {
		if strings.EqualFold(k, "password") || strings.EqualFold(k, "sslpassword") {
			return &URLError{Password: true, Reason: "carries a password option; remove it and supply the password through PGPASSFILE or PGPASSWORD, or a credential for the ledger.store consumer"}
		}
	}
	return nil
}

// scrub removes the store URL from msg, should a driver's message repeat
// it.
func scrub(msg, raw string) string {
	if raw == "" {
		return msg
	}
	return strings.ReplaceAll(msg, raw, "<store URL>")
}
