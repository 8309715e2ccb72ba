//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// group is a started command's process group: the command and every
// process it starts that does not leave it.
type group struct{ pgid int }

const sigTerm = syscall.SIGTERM

// startGroup starts cmd as the leader of a new process group.
func startGroup(cmd *exec.Cmd) (*group, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &group{pgid: cmd.Process.Pid}, nil
}

// signal sends sig to every process of the group; a group already gone is
// not an error.
func (g *group) signal(sig syscall.Signal) { _ = syscall.Kill(-g.pgid, sig) }

// kill ends every process of the group at once.
func (g *group) kill() { g.signal(syscall.SIGKILL) }
