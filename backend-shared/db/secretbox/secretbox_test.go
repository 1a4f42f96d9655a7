package secretbox

import (
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func mustKey(t *testing.T) []byte {
	t.Helper()
	k, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealOpenRoundTrip(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	kr, err := NewKeyring("k1", map[string][]byte{"k1": mustKey(t)})
	g.Expect(err).NotTo(HaveOccurred())

	sealed, err := kr.Seal([]byte("s3cr3t-token"), "t.c")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sealed).To(HavePrefix("v1:k1:"))
	g.Expect(sealed).NotTo(ContainSubstring("s3cr3t"))

	again, err := kr.Seal([]byte("s3cr3t-token"), "t.c")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).NotTo(Equal(sealed), "random nonce: equal plaintexts seal differently")

	plain, err := kr.Open(sealed, "t.c")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(plain)).To(Equal("s3cr3t-token"))

	empty, err := kr.Seal(nil, "t.c")
	g.Expect(err).NotTo(HaveOccurred())
	plain, err = kr.Open(empty, "t.c")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plain).To(BeEmpty())
}

func TestOpenFailures(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	kr, err := NewKeyring("k1", map[string][]byte{"k1": mustKey(t)})
	g.Expect(err).NotTo(HaveOccurred())
	other, err := NewKeyring("k1", map[string][]byte{"k1": mustKey(t)})
	g.Expect(err).NotTo(HaveOccurred())
	sealed, err := kr.Seal([]byte("x"), "t.a")
	g.Expect(err).NotTo(HaveOccurred())

	_, err = kr.Open(sealed, "t.b")
	g.Expect(errors.Is(err, ErrDecrypt)).To(BeTrue(), "context is authenticated")
	_, err = other.Open(sealed, "t.a")
	g.Expect(errors.Is(err, ErrDecrypt)).To(BeTrue(), "same id, different key")

	tampered := sealed[:len(sealed)-4] + "AAA="
	_, err = kr.Open(tampered, "t.a")
	g.Expect(err).To(HaveOccurred())

	for _, bad := range []string{"", "plaintext", "v2:k1:AAAA", "v1:k1:%%%", "v1:bad id:AAAA", "v1:k1:AAAA"} {
		_, err = kr.Open(bad, "t.a")
		g.Expect(errors.Is(err, ErrMalformed)).To(BeTrue(), bad)
	}
	_, err = kr.Open(strings.Replace(sealed, "v1:k1:", "v1:k9:", 1), "t.a")
	g.Expect(errors.Is(err, ErrUnknownKey)).To(BeTrue())
}

func TestRotationKeepsOldKeysReadable(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	k1, k2 := mustKey(t), mustKey(t)
	old, err := NewKeyring("k1", map[string][]byte{"k1": k1})
	g.Expect(err).NotTo(HaveOccurred())
	sealed, err := old.Seal([]byte("pw"), "c")
	g.Expect(err).NotTo(HaveOccurred())

	file := "# rotated\n" + FormatKeyLine("k2", k2) + "\n\n" + FormatKeyLine("k1", k1) + "\n"
	kr, err := ParseKeyring([]byte(file))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kr.PrimaryID()).To(Equal("k2"))
	g.Expect(kr.NeedsRotation(sealed)).To(BeTrue())

	plain, err := kr.Open(sealed, "c")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(plain)).To(Equal("pw"))
	resealed, err := kr.Seal(plain, "c")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kr.NeedsRotation(resealed)).To(BeFalse())
	id, err := KeyID(resealed)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(id).To(Equal("k2"))
}

func TestParseKeyringErrors(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	key := mustKey(t)
	for name, file := range map[string]string{
		"empty":        "# nothing\n",
		"no colon":     "k1\n",
		"bad base64":   "k1:not base64!\n",
		"short key":    "k1:AAAA\n",
		"bad id":       FormatKeyLine("bad id", key),
		"duplicate id": FormatKeyLine("k1", key) + "\n" + FormatKeyLine("k1", key),
	} {
		_, err := ParseKeyring([]byte(file))
		g.Expect(err).To(HaveOccurred(), name)
		g.Expect(err.Error()).NotTo(ContainSubstring(FormatKeyLine("", key)[1:]), "errors never echo key material")
	}
}
