package testenv

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestUploadPackDir(t *testing.T) {
	g := NewWithT(t)
	root := "/srv/git"
	for cmd, want := range map[string]string{
		"git-upload-pack '/repo.git'":        "/srv/git/repo.git",
		"git-upload-pack 'repo.git'":         "/srv/git/repo.git",
		"git-upload-pack '/a//b/./repo.git'": "/srv/git/a/b/repo.git",
	} {
		got, ok := uploadPackDir(root, cmd)
		g.Expect(ok).To(BeTrue(), cmd)
		g.Expect(got).To(Equal(want), cmd)
	}
	for _, cmd := range []string{
		"git-upload-pack '/../etc'", "git-upload-pack '/repo.git/../../x'", "git-upload-pack '..'",
		"git-receive-pack '/repo.git'", "git-upload-pack '/repo.git'; rm -rf /", "git-upload-pack '/a'b'",
		"git-upload-pack '/'", "git-upload-pack ''", "sh -c id", "git-upload-pack /repo.git",
	} {
		_, ok := uploadPackDir(root, cmd)
		g.Expect(ok).To(BeFalse(), cmd)
	}
}
