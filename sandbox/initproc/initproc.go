// Package initproc lets `acs agent-server` be its container's init (PID 1),
// so the sandbox image needs no init wrapper (tini, dumb-init, a shell):
// such a wrapper is started with the pod's environment, session key
// included, and shows it in its own /proc/1/environ to every tool of the
// same user.
//
// Guarantees, when Needed reports true (the process is PID 1, on Linux) and
// Run is called before anything else is done:
//
//   - The init process keeps the whole environment in memory, then seals
//     itself (procenv.Seal): the agent server's credentials leave its
//     environment and their values are overwritten in the block
//     /proc/1/environ shows, and it becomes non-dumpable.
//   - It starts the same binary again (/proc/self/exe, same arguments, same
//     working directory and standard streams) with the whole environment;
//     that child is the agent server, which seals itself as usual before it
//     starts any tool.
//   - It reaps every process that ends as its child: the server, and every
//     orphan of the namespace (a tool's background job whose parent exited
//     is reparented to PID 1), so no zombie accumulates.
//   - It forwards SIGTERM, SIGINT, SIGHUP and SIGQUIT to the server (PID 1
//     would otherwise ignore a signal it has no handler for).
//   - When the server exits, it sends SIGTERM to every process left in the
//     PID namespace, reaps them for up to StopGrace, and returns the server's
//     exit status (its exit code, or 128+N when a signal N ended it); the
//     caller exits with it, and the kernel kills whatever remains of the
//     namespace. It does not restart the server: restarting the container
//     is Kubernetes' job (restartPolicy).
package initproc

import "time"

// StopGrace is how long, once the server has exited, the processes left in
// the namespace have to exit after SIGTERM before init exits (and the kernel
// kills them).
const StopGrace = 5 * time.Second
