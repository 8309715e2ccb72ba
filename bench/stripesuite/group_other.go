//go:build !unix

package main

import (
	"os"
	"os/exec"
)

// group is a started command. Without process groups, only the command
// itself is stopped: what it started may outlive it.
type group struct{ p *os.Process }

var sigTerm = os.Interrupt

func startGroup(cmd *exec.Cmd) (*group, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &group{p: cmd.Process}, nil
}

func (g *group) signal(sig os.Signal) { _ = g.p.Signal(sig) }

func (g *group) kill() { _ = g.p.Kill() }
