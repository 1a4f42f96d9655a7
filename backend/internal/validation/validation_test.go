package validation

import (
	"strings"
	"testing"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

func TestSyncRunRevision(t *testing.T) {
	for _, tc := range []struct {
		name, revisionID, revisionId string
		want, wantErr                string
	}{
		{name: "neither: the deployment's target revision", want: ""},
		{name: "revisionID", revisionID: "0123abcd", want: "0123abcd"},
		{name: "the older spelling revisionId", revisionId: "0123abcd", want: "0123abcd"},
		{name: "both, equal", revisionID: "v1.2.0", revisionId: "v1.2.0", want: "v1.2.0"},
		{name: "both, different", revisionID: "main", revisionId: "0123abcd",
			wantErr: `spec.revisionId "0123abcd" is an older spelling of spec.revisionID and names another revision than spec.revisionID "main"; set only spec.revisionID`},
		{name: "control character in revisionID", revisionID: "v1\x00", wantErr: "spec.revisionID contains the control character U+0000; remove it"},
		{name: "control character in revisionId", revisionId: "v1\x00", wantErr: "spec.revisionId contains the control character U+0000; remove it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: "app", RevisionID: tc.revisionID, DeprecatedRevisionId: tc.revisionId}
			got, err := SyncRunRevision(spec)
			if tc.wantErr != "" {
				if !outcome.IsUser(err) || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want the user error %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestRefresh(t *testing.T) {
	for _, tc := range []struct {
		name, value, wantErr string
	}{
		{name: "none", value: ""},
		{name: "a time", value: "2026-12-07T21:00:00.123456789Z"},
		{name: "words", value: "deploy again, please"},
		{name: "the longest", value: strings.Repeat("x", MaxRefreshLength)},
		{name: "too long", value: strings.Repeat("x", MaxRefreshLength+1),
			wantErr: "metadata.annotations[managed-gitops.redhat.com/refresh] is 257 bytes long; at most 256 are allowed (a time or a counter will do)"},
		{name: "BEL", value: "now\a", wantErr: "metadata.annotations[managed-gitops.redhat.com/refresh] contains the control character U+0007; remove it"},
		{name: "DEL", value: "now\x7f", wantErr: "metadata.annotations[managed-gitops.redhat.com/refresh] contains the control character U+007F; remove it"},
		{name: "NUL", value: "now\x00", wantErr: "metadata.annotations[managed-gitops.redhat.com/refresh] contains the control character U+0000; remove it"},
		{name: "a newline", value: "a\nb", wantErr: "contains the control character U+000A"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Refresh(tc.value)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !outcome.IsUser(err) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want the user error %q", err, tc.wantErr)
			}
		})
	}
}
