// Package secretbox encrypts credential columns at rest with AES-256-GCM.
//
// A sealed value is the text "v1:<key id>:<base64(nonce || ciphertext || tag)>". The key id
// travels with every value, so a Keyring can hold old keys next to the primary one: values
// sealed with an old key still open, and a rotation re-seals whatever is not under the
// primary key (see db.RotateKeys). Each value is sealed with a caller-chosen context (the
// table and column it lives in) as additional authenticated data, so a ciphertext copied
// into another column does not open.
//
// There is no package-level state: callers load a Keyring and pass it where it is needed.
package secretbox

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// KeySize is the size of an AES-256 key in bytes.
const KeySize = 32

// prefix is the format version of sealed values; a new format gets a new prefix.
const prefix = "v1"

var (
	// ErrUnknownKey is returned by Open for a value sealed with a key the keyring lacks.
	ErrUnknownKey = errors.New("secretbox: value sealed with a key not in the keyring")
	// ErrMalformed is returned by Open for text that is not a sealed value.
	ErrMalformed = errors.New("secretbox: malformed sealed value")
	// ErrDecrypt is returned by Open when authentication fails (wrong key, tampered value,
	// or a value moved from another column).
	ErrDecrypt = errors.New("secretbox: decryption failed")
)

// keyIDPattern keeps key ids safe inside the sealed format and in file lines.
var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Keyring is a set of AES-256 keys by id, one of which (the primary) seals new values.
// It is immutable after construction and safe for concurrent use.
type Keyring struct {
	primary string
	aeads   map[string]cipher.AEAD
}

// NewKeyring builds a keyring from keys by id; primary must be one of them.
func NewKeyring(primary string, keys map[string][]byte) (*Keyring, error) {
	if _, ok := keys[primary]; !ok {
		return nil, fmt.Errorf("secretbox: primary key %q is not in the keyring", primary)
	}
	k := &Keyring{primary: primary, aeads: make(map[string]cipher.AEAD, len(keys))}
	for id, key := range keys {
		if !keyIDPattern.MatchString(id) {
			return nil, fmt.Errorf("secretbox: invalid key id %q (want 1-64 characters of A-Z a-z 0-9 . _ -)", id)
		}
		if len(key) != KeySize {
			return nil, fmt.Errorf("secretbox: key %q is %d bytes, want %d", id, len(key), KeySize)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		k.aeads[id] = aead
	}
	return k, nil
}

// ParseKeyring reads the keyring file format: one key per line as "<id>:<base64 key>"
// (standard base64 of 32 random bytes), the first key being the primary. Blank lines and
// lines starting with '#' are ignored. To rotate, put a new key on the first line, keep
// the old ones below it, roll the binaries, run `rotate-keys`, then drop the old lines.
func ParseKeyring(data []byte) (*Keyring, error) {
	keys := map[string][]byte{}
	primary := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, b64, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("secretbox: keyring line %d: want <id>:<base64 key>", n)
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
		if err != nil {
			// The line holds key material: never echo it.
			return nil, fmt.Errorf("secretbox: keyring line %d: key is not valid base64", n)
		}
		id = strings.TrimSpace(id)
		if _, dup := keys[id]; dup {
			return nil, fmt.Errorf("secretbox: keyring line %d: duplicate key id %q", n, id)
		}
		keys[id] = key
		if primary == "" {
			primary = id
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if primary == "" {
		return nil, errors.New("secretbox: keyring has no keys")
	}
	return NewKeyring(primary, keys)
}

// LoadKeyringFile reads a keyring file (see ParseKeyring), typically a mounted Secret.
func LoadKeyringFile(path string) (*Keyring, error) {
	data, err := os.ReadFile(path) //nolint:gosec // the operator names the file
	if err != nil {
		return nil, fmt.Errorf("secretbox: reading keyring: %w", err)
	}
	k, err := ParseKeyring(data)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return k, nil
}

// GenerateKey returns a new random AES-256 key.
func GenerateKey() ([]byte, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	return key, nil
}

// FormatKeyLine renders a key as a keyring file line.
func FormatKeyLine(id string, key []byte) string {
	return id + ":" + base64.StdEncoding.EncodeToString(key)
}

// PrimaryID is the id of the key that seals new values.
func (k *Keyring) PrimaryID() string { return k.primary }

// Seal encrypts plaintext with the primary key under a fresh random nonce. context binds
// the value to where it is stored (e.g. "cluster_credentials.bearer_token"); Open must be
// given the same context.
func (k *Keyring) Seal(plaintext []byte, context string) (string, error) {
	aead := k.aeads[k.primary]
	out := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(out); err != nil {
		return "", err
	}
	out = aead.Seal(out, out, plaintext, []byte(context))
	return prefix + ":" + k.primary + ":" + base64.StdEncoding.EncodeToString(out), nil
}

// Open decrypts a value produced by Seal with the same context, with whichever key of the
// keyring sealed it.
func (k *Keyring) Open(sealed, context string) ([]byte, error) {
	id, data, err := split(sealed)
	if err != nil {
		return nil, err
	}
	aead, ok := k.aeads[id]
	if !ok {
		return nil, fmt.Errorf("%w: key id %q", ErrUnknownKey, id)
	}
	if len(data) < aead.NonceSize()+aead.Overhead() {
		return nil, ErrMalformed
	}
	plain, err := aead.Open(nil, data[:aead.NonceSize()], data[aead.NonceSize():], []byte(context))
	if err != nil {
		return nil, ErrDecrypt
	}
	return plain, nil
}

// KeyID returns the id of the key that sealed a value.
func KeyID(sealed string) (string, error) {
	id, _, err := split(sealed)
	return id, err
}

// NeedsRotation reports whether a sealed value is under a key other than the primary.
func (k *Keyring) NeedsRotation(sealed string) bool {
	id, err := KeyID(sealed)
	return err != nil || id != k.primary
}

func split(sealed string) (id string, data []byte, err error) {
	parts := strings.SplitN(sealed, ":", 3)
	if len(parts) != 3 || parts[0] != prefix || !keyIDPattern.MatchString(parts[1]) {
		return "", nil, ErrMalformed
	}
	data, err = base64.StdEncoding.DecodeString(parts[2])
	if err != nil {
		return "", nil, ErrMalformed
	}
	return parts[1], data, nil
}
