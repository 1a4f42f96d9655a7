package install

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// The info strings of the shell blocks of docs/install.md that an operator runs to install
// the service and to upgrade it: the install and upgrade tests run exactly those, in order.
const (
	InstallBlocks = "sh install"
	UpgradeBlocks = "sh upgrade"
)

// guideBlock is one shell block of the guide and where it starts.
type guideBlock struct {
	line   int
	script string
}

// guideBlocks reads the guide's blocks marked info.
func guideBlocks(path, info string) ([]guideBlock, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		blocks []guideBlock
		cur    *guideBlock
		n      int
	)
	s := bufio.NewScanner(f)
	for s.Scan() {
		n++
		line := s.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```"+info:
			cur = &guideBlock{line: n + 1}
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.script += line + "\n"
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s: the block at line %d is not closed", path, cur.line)
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("%s has no ```%s blocks", path, info)
	}
	return blocks, s.Err()
}

// RunGuide runs the blocks marked info of the guide at path in order, each with bash -euo
// pipefail in dir with env, and stops at the first that fails.
func RunGuide(path, info, dir string, env []string) error {
	blocks, err := guideBlocks(path, info)
	if err != nil {
		return err
	}
	for _, b := range blocks {
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", b.script)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s, the block at line %d: %w\n%s\n%s", path, b.line, err, b.script, out)
		}
	}
	return nil
}

// GuideEnv is what the guide's blocks read, for a node whose kubectl is in kubeDir: the
// database and its CA, and the Argo CD and Redis images the node imported.
func GuideEnv(kubeconfig, kubeDir string, db *Database, imageRepo string) []string {
	return append(os.Environ(),
		"KUBECONFIG="+kubeconfig,
		"PATH="+kubeDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"DATABASE_URL="+db.URL,
		"DATABASE_CA="+db.CAFile,
		"ARGOCD_IMAGE="+imageRepo+"/argocd:v3.2.11",
		"REDIS_IMAGE="+imageRepo+"/redis:debian",
	)
}
