package mcp

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// assertionType is the client_assertion_type of private_key_jwt (RFC 7523).
const assertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// assertion signs a private_key_jwt client assertion for clientID: issuer
// and subject the client, audience the authorization server's issuer, a
// few minutes' lifetime and a fresh jti. The key is the configured
// credential, ES256 for an EC P-256 key and RS256 for an RSA one.
func (o *oauthClient) assertion(ctx context.Context, clientID string) (string, error) {
	fail := func(reason string, err error) (string, error) {
		return "", &AuthError{Server: o.server, Step: "token", Reason: reason, Err: err}
	}
	pemText, err := o.credential(ctx, o.cfg.PrivateKey, "mcp:"+o.server+":oauth:private_key")
	if err != nil {
		return fail("the private key", err)
	}
	key, err := parsePrivateKey(pemText)
	if err != nil {
		return fail("the private key credential", err)
	}
	alg := "RS256"
	if _, ok := key.(*ecdsa.PrivateKey); ok {
		alg = "ES256"
	}
	if algs := o.disc.meta.TokenEndpointAuthSigningAlgValuesSupported; len(algs) > 0 && !contains(algs, alg) {
		return fail(fmt.Sprintf("the authorization server accepts assertions signed with %s, and the key signs %s", strings.Join(algs, ", "), alg), nil)
	}
	now := o.now()
	header, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{
		"iss": clientID, "sub": clientID, "aud": o.disc.meta.Issuer,
		"iat": now.Unix(), "exp": now.Add(assertionLifetime).Unix(), "jti": randomID(),
	})
	signing := b64(header) + "." + b64(claims)
	sum := sha256.Sum256([]byte(signing))
	var sig []byte
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, k, sum[:])
		if err != nil {
			return fail("signing the assertion", err)
		}
		sig = append(pad32(r), pad32(s)...)
	case *rsa.PrivateKey:
		sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
		if err != nil {
			return fail("signing the assertion", err)
		}
	}
	return signing + "." + b64(sig), nil
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func pad32(n *big.Int) []byte {
	out := make([]byte, 32)
	return n.FillBytes(out)
}

// parsePrivateKey reads an EC P-256 or RSA private key from PEM (PKCS#8,
// SEC 1 or PKCS#1). Its errors never quote the key.
func parsePrivateKey(text string) (any, error) {
	block, _ := pem.Decode([]byte(strings.TrimSpace(text)))
	if block == nil {
		return nil, errors.New("it is not PEM")
	}
	var key any
	var err error
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, errors.New("the PEM block does not hold a private key this client reads (PKCS#8, SEC 1 or PKCS#1)")
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return nil, errors.New("an EC key must be on P-256 (ES256)")
		}
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return nil, errors.New("an RSA key must have at least 2048 bits")
		}
	default:
		return nil, fmt.Errorf("a %T key cannot sign ES256 or RS256", key)
	}
	return key, nil
}
