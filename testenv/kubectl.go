package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

// runKubectl runs the kubectl of the same Kubernetes release as this control
// plane, built from the same modules: `testenv kubectl get pods` is
// `kubectl get pods`. The integration tests use it as a client of `kdi serve`.
func runKubectl(args []string) {
	os.Args = append([]string{"kubectl"}, args...)
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		// Prints the error as kubectl does and exits with its code.
		util.CheckErr(err)
	}
	os.Exit(0)
}
