package validation

import (
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
