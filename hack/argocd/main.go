// Command argocd is the part of Argo CD the local stack, the end-to-end tests and the
// one-node cluster's Argo CD image run: the application controller, the repo server, the
// Git credential helper the repo server calls, `argocd admin redis-initial-password`,
// which Argo CD's install manifests run before Redis starts, and `argocd admin health-lua`,
// which runs a Lua health check as Argo CD does (for the service's tests). Like Argo CD's own image, one
// binary serves every role, chosen by the program name or by ARGOCD_BINARY_NAME (the repo
// server sets that when it runs the credential helper).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	gitaskpass "github.com/argoproj/argo-cd/v3/cmd/argocd-git-ask-pass/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
	"github.com/argoproj/argo-cd/v3/util/log"
)

func init() {
	// klog (client-go) logs through Argo CD's configured logger, as in Argo CD's own main.
	klog.SetLogger(log.NewLogrusLogger(log.NewWithCurrentConfig()))
}

func main() {
	name := filepath.Base(os.Args[0])
	if v := os.Getenv("ARGOCD_BINARY_NAME"); v != "" {
		name = v
	}
	var command *cobra.Command
	switch name {
	case "argocd-application-controller":
		command = appcontroller.NewCommand()
	case "argocd-repo-server":
		command = reposerver.NewCommand()
	case "argocd-git-ask-pass":
		command = gitaskpass.NewCommand()
	case "argocd":
		if len(os.Args) == 3 && os.Args[1] == "admin" && os.Args[2] == "redis-initial-password" {
			if err := ensureRedisPassword(); err != nil {
				fmt.Fprintln(os.Stderr, "argocd admin redis-initial-password:", err)
				os.Exit(1)
			}
			return
		}
		if len(os.Args) == 4 && os.Args[1] == "admin" && os.Args[2] == "health-lua" {
			if err := healthLua(os.Args[3], os.Stdin, os.Stdout); err != nil {
				fmt.Fprintln(os.Stderr, "argocd admin health-lua:", err)
				os.Exit(1)
			}
			return
		}
		fmt.Fprintln(os.Stderr, "argocd: only `argocd admin redis-initial-password` and `argocd admin health-lua SCRIPT` are built in")
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "%s: unknown role; run as argocd-application-controller, argocd-repo-server or argocd-git-ask-pass (program name or ARGOCD_BINARY_NAME)\n", name)
		os.Exit(2)
	}
	if err := command.Execute(); err != nil {
		os.Exit(1)
	}
}
