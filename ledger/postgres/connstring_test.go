package postgres_test

import (
	"errors"
	"testing"

	"github.com/pabloagent/pablo/ledger/postgres"
)

// TestConnectionStringsAreToldFromPaths: every libpq key=value string and
// every value holding "://" is a connection string, refused by CheckURL
// unless it is a postgres URL; a path with "=" further on is a path. A
// key=value string or an sslpassword option carrying a password matches
// ErrPasswordInURL.
func TestConnectionStringsAreToldFromPaths(t *testing.T) {
	for v, want := range map[string]bool{
		"ledger.db": false, "./run=1/ledger.db": false, "hosts=2.db": false, "=": false, "": false,
		"host=db": true, " Password = x": true, "dbname=l user=u": true, "pg://h/d": true, " postgres://h/d": true,
	} {
		if got := postgres.IsConnectionString(v); got != want {
			t.Errorf("IsConnectionString(%q) = %v, want %v", v, got, want)
		}
	}
	for _, v := range []string{"host=db password=x", "postgres://h/d?sslpassword=x", "postgres://h/d?SSLPassword=x"} {
		if err := postgres.CheckURL(v); !errors.Is(err, postgres.ErrPasswordInURL) || !errors.Is(err, postgres.ErrURL) {
			t.Errorf("CheckURL(%q) = %v, want ErrPasswordInURL", v, err)
		}
	}
	if err := postgres.CheckURL("host=db"); errors.Is(err, postgres.ErrPasswordInURL) || !errors.Is(err, postgres.ErrURL) {
		t.Errorf("CheckURL(host=db) = %v, want ErrURL only", err)
	}
}
