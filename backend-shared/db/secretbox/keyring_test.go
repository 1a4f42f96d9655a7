package secretbox

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestNewKeyringRejects(t *testing.T) {
	t.Parallel()
	key := mustKey(t)
	tests := []struct {
		name    string
		primary string
		keys    map[string][]byte
		wantMsg string
	}{
		{"a primary that is not in the keyring", "k2", map[string][]byte{"k1": key}, `primary key "k2" is not in the keyring`},
		{"no keys at all", "k1", nil, `primary key "k1" is not in the keyring`},
		{"a short key", "k1", map[string][]byte{"k1": key[:16]}, `key "k1" is 16 bytes, want 32`},
		{"a long key", "k1", map[string][]byte{"k1": append(append([]byte{}, key...), 0)}, `key "k1" is 33 bytes, want 32`},
		// Key ids travel inside every sealed value, split at ':'.
		{"an id with a colon", "a:b", map[string][]byte{"a:b": key}, `invalid key id "a:b"`},
		{"an empty id", "", map[string][]byte{"": key}, `invalid key id ""`},
		{"an id of 65 characters", strings.Repeat("k", 65), map[string][]byte{strings.Repeat("k", 65): key}, "invalid key id"},
		{"a bad id among the old keys", "k1", map[string][]byte{"k1": key, "old key": key}, `invalid key id "old key"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewKeyring(tt.primary, tt.keys)
			if err == nil || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %v, want one containing %q", err, tt.wantMsg)
			}
		})
	}
}

func TestNewKeyringAcceptsEveryIDCharacter(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"k", "2026-01.prod_key", strings.Repeat("a", 64), "A.b-C_9"} {
		kr, err := NewKeyring(id, map[string][]byte{id: mustKey(t)})
		if err != nil {
			t.Errorf("id %q: %v", id, err)
			continue
		}
		sealed, err := kr.Seal([]byte("x"), "c")
		if err != nil {
			t.Fatal(err)
		}
		if got, err := KeyID(sealed); err != nil || got != id {
			t.Errorf("KeyID = %q, %v; want %q", got, err, id)
		}
	}
}

func TestParseKeyringFileFormat(t *testing.T) {
	t.Parallel()
	k1, k2 := mustKey(t), mustKey(t)
	b64 := func(k []byte) string { return base64.StdEncoding.EncodeToString(k) }
	tests := []struct {
		name        string
		file        string
		wantPrimary string
		wantErr     string
	}{
		{"one key", FormatKeyLine("k1", k1), "k1", ""},
		{"the first key is the primary", FormatKeyLine("k2", k2) + "\n" + FormatKeyLine("k1", k1), "k2", ""},
		{"comments and blank lines", "# keys\n\n   \n# old:\n" + FormatKeyLine("k1", k1) + "\n", "k1", ""},
		// Files written on Windows or by hand keep working.
		{"CRLF and spaces", "  k1 : " + b64(k1) + " \r\n" + FormatKeyLine("k2", k2) + "\r\n", "k1", ""},
		{"an indented comment", "   # k0:nothing\n" + FormatKeyLine("k1", k1), "k1", ""},
		{"only comments", "# k1:" + b64(k1) + "\n", "", "keyring has no keys"},
		{"a line without a colon names its number", "# header\n" + FormatKeyLine("k1", k1) + "\nk2 " + b64(k2), "", "keyring line 3: want <id>:<base64 key>"},
		{"URL-safe base64 is not the format", "k1:" + base64.URLEncoding.EncodeToString(append([]byte{0xfb, 0xff}, k1[2:]...)), "", "line 1: key is not valid base64"},
		{"a duplicate id after trimming", FormatKeyLine("k1", k1) + "\n k1 :" + b64(k2), "", `line 2: duplicate key id "k1"`},
		{"a key of the wrong size", "k1:" + b64(k1[:31]), "", "is 31 bytes, want 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kr, err := ParseKeyring([]byte(tt.file))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				for _, k := range [][]byte{k1, k2} {
					if strings.Contains(err.Error(), b64(k)) {
						t.Errorf("the error echoes key material: %v", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if kr.PrimaryID() != tt.wantPrimary {
				t.Errorf("primary %q, want %q", kr.PrimaryID(), tt.wantPrimary)
			}
		})
	}
}

func TestLoadKeyringFile(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	dir := t.TempDir()
	key := mustKey(t)
	good := filepath.Join(dir, "keys")
	g.Expect(os.WriteFile(good, []byte(FormatKeyLine("k1", key)+"\n"), 0o600)).To(Succeed())
	kr, err := LoadKeyringFile(good)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kr.PrimaryID()).To(Equal("k1"))

	_, err = LoadKeyringFile(filepath.Join(dir, "missing"))
	g.Expect(err).To(MatchError(ContainSubstring("reading keyring")))
	g.Expect(errors.Is(err, os.ErrNotExist)).To(BeTrue())

	// A bad file is named, so the operator knows which mount to fix.
	bad := filepath.Join(dir, "bad")
	g.Expect(os.WriteFile(bad, []byte("k1:"+base64.StdEncoding.EncodeToString(key[:8])), 0o600)).To(Succeed())
	_, err = LoadKeyringFile(bad)
	g.Expect(err).To(MatchError(ContainSubstring("(file " + bad + ")")))
	g.Expect(err).To(MatchError(ContainSubstring("is 8 bytes")))
}

func TestFormatKeyLineRoundTrips(t *testing.T) {
	t.Parallel()
	key := mustKey(t)
	line := FormatKeyLine("prod-1", key)
	if !strings.HasPrefix(line, "prod-1:") || strings.ContainsAny(line, "\n ") {
		t.Fatalf("line %q", line)
	}
	kr, err := ParseKeyring([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	direct, err := NewKeyring("prod-1", map[string][]byte{"prod-1": key})
	if err != nil {
		t.Fatal(err)
	}
	// The same key read from its line opens what the key sealed.
	sealed, _ := direct.Seal([]byte("pw"), "c")
	if plain, err := kr.Open(sealed, "c"); err != nil || string(plain) != "pw" {
		t.Errorf("Open = %q, %v", plain, err)
	}
}

func TestGenerateKeyIsRandom(t *testing.T) {
	t.Parallel()
	a, b := mustKey(t), mustKey(t)
	if len(a) != KeySize || string(a) == string(b) {
		t.Errorf("keys of %d bytes, equal: %v", len(a), string(a) == string(b))
	}
}

func TestKeyIDAndNeedsRotation(t *testing.T) {
	t.Parallel()
	kr, err := NewKeyring("new", map[string][]byte{"new": mustKey(t), "old": mustKey(t)})
	if err != nil {
		t.Fatal(err)
	}
	sealed, _ := kr.Seal([]byte("x"), "c")
	tests := []struct {
		name         string
		value        string
		wantID       string
		wantErr      bool
		wantRotation bool
	}{
		{"under the primary", sealed, "new", false, false},
		{"under an old key", "v1:old:" + strings.SplitN(sealed, ":", 3)[2], "old", false, true},
		{"under a key the keyring lacks", "v1:gone:AAAA", "gone", false, true},
		// Anything that is not a sealed value (plaintext left from before encryption) is rotated.
		{"plaintext", "hunter2", "", true, true},
		{"another format version", "v2:new:AAAA", "", true, true},
		{"not base64", "v1:new:!!", "", true, true},
		{"empty", "", "", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := KeyID(tt.value)
			if (err != nil) != tt.wantErr || id != tt.wantID {
				t.Errorf("KeyID = %q, %v; want %q (error: %v)", id, err, tt.wantID, tt.wantErr)
			}
			if tt.wantErr && !errors.Is(err, ErrMalformed) {
				t.Errorf("error %v is not ErrMalformed", err)
			}
			if got := kr.NeedsRotation(tt.value); got != tt.wantRotation {
				t.Errorf("NeedsRotation = %v, want %v", got, tt.wantRotation)
			}
		})
	}
}

func TestOpenOfAValueShorterThanANonce(t *testing.T) {
	t.Parallel()
	kr, err := NewKeyring("k1", map[string][]byte{"k1": mustKey(t)})
	if err != nil {
		t.Fatal(err)
	}
	// Nonce (12) and tag (16) need 28 bytes; 27 cannot be a sealed value.
	short := "v1:k1:" + base64.StdEncoding.EncodeToString(make([]byte, 27))
	if _, err := kr.Open(short, "c"); !errors.Is(err, ErrMalformed) {
		t.Errorf("Open of 27 bytes: %v, want ErrMalformed", err)
	}
	// 28 zero bytes have the shape, but do not authenticate.
	shaped := "v1:k1:" + base64.StdEncoding.EncodeToString(make([]byte, 28))
	if _, err := kr.Open(shaped, "c"); !errors.Is(err, ErrDecrypt) {
		t.Errorf("Open of 28 zero bytes: %v, want ErrDecrypt", err)
	}
}

func TestAValueOpensOnlyInItsOwnContext(t *testing.T) {
	t.Parallel()
	kr, err := NewKeyring("k1", map[string][]byte{"k1": mustKey(t)})
	if err != nil {
		t.Fatal(err)
	}
	token, _ := kr.Seal([]byte("token"), "cluster_credentials.bearer_token")
	for _, ctx := range []string{"", "cluster_credentials.password", "cluster_credentials.bearer_token ", "CLUSTER_CREDENTIALS.BEARER_TOKEN"} {
		if _, err := kr.Open(token, ctx); !errors.Is(err, ErrDecrypt) {
			t.Errorf("opened in context %q: %v", ctx, err)
		}
	}
	if plain, err := kr.Open(token, "cluster_credentials.bearer_token"); err != nil || string(plain) != "token" {
		t.Errorf("Open in its own context = %q, %v", plain, err)
	}
}
