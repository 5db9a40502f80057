package egress

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
)

// ForwarderName is the program name the in-sandbox forwarder runs under
// (its argv[0]'s base name): a binary that calls [ForwarderMain] first
// thing in main turns into the forwarder when started by that name.
const ForwarderName = "pablo-egress-forward"

// ListenAddr is the loopback address the forwarder listens on inside the
// sandbox's own network namespace, and HTTP_PROXY names.
const ListenAddr = "127.0.0.1:3128"

// ForwarderMain makes the running binary the in-sandbox forwarder when
// its argv[0] is ForwarderName: it never returns then, and does nothing
// otherwise. Call it first thing in main (and in TestMain).
//
// The forwarder's arguments are the proxy's Unix socket, then the command
// and its arguments. It listens on ListenAddr, starts the command, carries
// every connection to the socket, and exits with the command's status.
func ForwarderMain() {
	if filepath.Base(os.Args[0]) != ForwarderName {
		return
	}
	os.Exit(forward(os.Args[1:]))
}

func forward(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, ForwarderName+": usage: SOCKET COMMAND [ARG...]")
		return 125
	}
	socket, argv := args[0], args[1:]
	ln, err := net.Listen("tcp", ListenAddr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: listen %s: %v\n", ForwarderName, ListenAddr, err)
		return 125
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				up, err := net.Dial("unix", socket)
				if err != nil {
					c.Close()
					return
				}
				splice(c, up)
			}()
		}
	}()
	// The forwarder passes the signals a shell's job control sends on
	// to the command, and ends with it.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Path = argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", ForwarderName, err)
		return 127
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", ForwarderName, err)
	return 125
}
