package install

import (
	"os"
	"path/filepath"
	"testing"
)

func TestGuideBlocks(t *testing.T) {
	tests := []struct {
		name    string
		guide   string
		want    []guideBlock
		wantErr bool
	}{
		{
			name:  "only install blocks, in order",
			guide: "# Guide\n```sh\nnot run\n```\n```sh install\nkubectl apply -f a.yaml\n```\ntext\n```sh upgrade\nnot either\n```\n```sh install\none\ntwo\n```\n",
			want:  []guideBlock{{line: 6, script: "kubectl apply -f a.yaml\n"}, {line: 13, script: "one\ntwo\n"}},
		},
		{name: "a block left open", guide: "```sh install\nkubectl\n", wantErr: true},
		{name: "no install block", guide: "```sh\nkubectl\n```\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "guide.md")
			if err := os.WriteFile(path, []byte(tt.guide), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := guideBlocks(path, InstallBlocks)
			if (err != nil) != tt.wantErr {
				t.Fatalf("guideBlocks() error = %v, want error %v", err, tt.wantErr)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("guideBlocks() = %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("block %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}
