package install

import (
	"bufio"
	"fmt"
	"os"
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
