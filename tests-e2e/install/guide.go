package install

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// installBlockInfo marks the shell blocks of docs/install.md that an operator runs to
// install the service: the install test runs exactly those, in order.
const installBlockInfo = "sh install"

// guideBlock is one shell block of the guide and where it starts.
type guideBlock struct {
	line   int
	script string
}

// installBlocks reads the guide's install blocks.
func installBlocks(path string) ([]guideBlock, error) {
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
		case cur == nil && strings.TrimSpace(line) == "```"+installBlockInfo:
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
		return nil, fmt.Errorf("%s has no ```%s blocks", path, installBlockInfo)
	}
	return blocks, s.Err()
}

// RunGuide runs the install blocks of the guide at path in order, each with bash -euo
// pipefail in dir with env, and stops at the first that fails.
func RunGuide(path, dir string, env []string) error {
	blocks, err := installBlocks(path)
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
