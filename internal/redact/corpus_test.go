package redact

import (
	"strings"
	"testing"
)

// Real-format samples (documentation examples and made-up values of the
// same shape): each must be masked whole, in the middle of ordinary text.
var suspectedSecrets = []struct{ name, text string }{
	{"aws_access_key_id", "AKIAIOSFODNN7EXAMPLE"},
	{"aws_session_key_id", "ASIAY34FZKBOKMUTVV7A"},
	{"github_token", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"},
	{"github_oauth", "gho_16C7e42F292c6912E7710c838347Ae178B4a"},
	{"github_app", "ghs_16C7e42F292c6912E7710c838347Ae178B4a"},
	{"github_user", "ghu_16C7e42F292c6912E7710c838347Ae178B4a"},
	{"github_pat", "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghij"},
	{"gitlab_token", "glpat-xG9vZ3Jv-aB1cD2eF3gH"},
	{"openai_legacy", "sk-4eC39HqLyjWDarjtT1zdp7dc4eC39HqLyjWDarjtT1zdp7dc"},
	{"openai_project", "sk-proj-Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7nP9rS1tV3xZ5_aB7dE9gH1jK3mN5pQ7"},
	{"anthropic", "sk-ant-api03-Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7nP9rS1tV3xZ5-aB7dE9gH1jK3mN5pQ7AA"},
	{"slack_bot", "xoxb-2400000000-2400000000000-Ab3dE5gH7jK9mN1pQ3sT5vW7"},
	{"slack_user", "xoxp-2400000000-2400000000000-2400000000000-0123456789abcdef0123456789abcdef"},
	{"stripe_secret", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"},
	{"stripe_restricted", "rk_live_4eC39HqLyjWDarjtT1zdp7dc"},
	{"google_api_key", "AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI"},
	{"jwt", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"},
	{"pem_rsa", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\naFDrBz9vFqU4yXr4RkE7Ls6sJrZ0IhXv+0Z1D7bbPiEXAMPLEONLYfAKEKEYDATA\n-----END RSA PRIVATE KEY-----"},
	{"pem_pkcs8", "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF\n-----END PRIVATE KEY-----"},
	{"pem_openssh", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----"},
	{"pem_encrypted", "-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0123456789ABCDEF\n\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oNmEXAMPLEpUoAoGCCqGSM49\n-----END EC PRIVATE KEY-----"},
}

// Secrets inside a URL's userinfo: the password and the user are masked,
// the scheme and host stay readable.
var userinfoURLs = []struct{ text, want string }{
	{"https://deploy:hunter2hunter2@git.example.com/repo.git", "https://[redacted]@git.example.com/repo.git"},
	{"postgres://admin:s3cr3t-P%40ss@db.internal:5432/app", "postgres://[redacted]@db.internal:5432/app"},
}

// Near misses: formats that look like credentials and are not, and
// ordinary text. None may be changed.
var nearMisses = []string{
	"123e4567-e89b-12d3-a456-426614174000",     // UUID
	"3f786850e387550fdab836ed7e6dc881de23001b", // git SHA-1
	"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
	"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
	"eyJhbGciOiJub25lIn0=", // base64 JSON, not a JWT
	"the task-management board, ask-me-anything threads and scikit-learn (sk-learn) docs",
	"AKIA is the prefix of an AWS key; AKIASHORT is not one; XAKIAIOSFODNN7EXAMPLE neither",
	"ghp_tooShort and github_pat_ are mentioned in the docs, xoxb-short too, sk_live_short",
	"https://example.com/path?q=1#frag and http://localhost:8080/x@y and mailto:user@example.com",
	"git@github.com:org/repo.git and ssh://git@github.com/org/repo",
	"-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUXJ2d\n-----END CERTIFICATE-----",
	"-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----",
	"Lorem ipsum dolor sit amet, consectetur adipiscing elit; desk-lamp, skeleton-key, risk-assessment.",
	"func (s *Set) Mask(b []byte) ([]byte, int) // AIza is Google's prefix",
}

func TestSuspectedSecretsAreMasked(t *testing.T) {
	var s Set
	for _, c := range suspectedSecrets {
		in := "before " + c.text + " after"
		got, n := s.MaskString(in)
		if got != "before "+Mask+" after" || n != 1 {
			t.Errorf("%s: %q became %q (%d masks)", c.name, in, got, n)
		}
	}
	for _, c := range userinfoURLs {
		if got, n := s.MaskString(c.text); got != c.want || n != 1 {
			t.Errorf("%q became %q (%d masks), want %q", c.text, got, n, c.want)
		}
	}
}

func TestNearMissesAreNotMasked(t *testing.T) {
	var s Set
	for _, in := range nearMisses {
		if got, n := s.MaskString(in); got != in || n != 0 {
			t.Errorf("%q became %q", in, got)
		}
	}
}

// A deployment's own patterns are masked beside the built-ins, with and
// without a literal prefix.
func TestDeploymentPatternsAreMasked(t *testing.T) {
	var s Set
	for _, expr := range []string{`\bACME-[0-9A-F]{12}\b`, `[0-9]{3}-[0-9]{2}-[0-9]{4}`} {
		p, err := NewPattern("test", expr)
		if err != nil {
			t.Fatal(err)
		}
		s.AddPatterns(p)
	}
	got, n := s.MaskString("key ACME-0123456789AB, ssn 078-05-1120, aws AKIAIOSFODNN7EXAMPLE")
	if want := "key [redacted], ssn [redacted], aws [redacted]"; got != want || n != 3 {
		t.Fatalf("got %q (%d masks)", got, n)
	}
}

func TestPatternMustCompileAndBeBounded(t *testing.T) {
	for _, expr := range []string{`(unclosed`, `tok-[a-z]+`, `a*`, `x{1,1000}{1,1000}`, `(?:[a-z]{1,100}){1,100}`, strings.Repeat("a", MaxExprBytes+1), `\b`} {
		_, err := NewPattern("test", expr)
		var pe *PatternError
		if err == nil || !asPatternError(err, &pe) || pe.Reason == "" {
			t.Errorf("%q: got %v, want a *PatternError", expr, err)
		}
	}
	if _, err := NewPattern("ok", `tok-[a-z0-9]{8,64}`); err != nil {
		t.Fatal(err)
	}
}
