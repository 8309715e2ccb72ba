// Package testport hands tests a TCP port to give a process that binds it
// later by number (a redis-server, a container, a command under test), as
// opposed to a listener the test keeps open.
//
// A port the kernel chose for "127.0.0.1:0" comes from the ephemeral range
// (32768–60999 on Linux), and between closing that listener and the
// process's bind, any outgoing connection elsewhere in a parallel test run
// can be given the same number as its source port: the bind then fails with
// "address already in use". CI failed once on exactly that. Free draws
// below the range, where only another listener choosing its own number can
// collide, and a caller that sees its bind fail can draw again.
package testport
