// Package initproc lets `acs agent-server` be its sandbox's init: PID 1 of
// its container (Run), or the supervisor a local process sandbox starts
// (Supervise). The sandbox image needs no init wrapper (tini, dumb-init, a
// shell): such a wrapper is started with the pod's environment, session
// key included, and shows it in its own /proc/1/environ to every tool of
// the same user.
//
// Guarantees of both, on Linux, when called before anything else is done:
//
//   - The init process keeps the whole environment in memory, then seals
//     itself (procenv.Seal): the agent server's credentials leave its
//     environment and their values are overwritten in the block
//     /proc/<pid>/environ shows, and it becomes non-dumpable.
//   - It starts the agent server (/proc/self/exe, the given arguments, same
//     working directory and standard streams) with the whole environment;
//     the server seals itself as usual before it starts any tool. The
//     server is killed if init dies.
//   - It reaps every process that ends as its child: the server, and every
//     orphan below it (a tool's background job whose parent exited), so no
//     zombie accumulates.
//   - It forwards SIGTERM, SIGINT, SIGHUP and SIGQUIT to the server (PID 1
//     would otherwise ignore a signal it has no handler for).
//   - It does not restart the server: restarting the container is
//     Kubernetes' job (restartPolicy), restarting a process sandbox is
//     procsandbox's.
//
// Run, when Needed reports true (the process is PID 1): when the server
// exits, it sends SIGTERM to every process left in the PID namespace, reaps
// them for up to StopGrace, and returns the server's exit status (its exit
// code, or 128+N when a signal N ended it); the caller exits with it, and
// the kernel kills whatever remains of the namespace.
//
// Supervise, for a process sandbox that has no PID namespace of its own:
//
//   - It is the child subreaper of every process the server starts: an
//     orphan below it, a job detached with setsid or a double fork
//     included, becomes its child, not the system init's.
//   - When the server exits, crashes or is killed, it stops every process
//     below it: SIGTERM, then SIGKILL after a quarter of its stop budget,
//     until none is left.
//   - Told to stop by a signal, or when the end of its parent's pipe shows
//     the parent died, it passes the stop to the server and kills it after
//     half its budget. It then stops the rest as above.
//   - It ends the way the server ended, killed by the same signal or with
//     its exit code, so its parent sees the server's death.
//
// An init killed with SIGKILL stops nothing: the server dies with it, and
// the processes below a Supervise init go to the system's init. Process
// sandboxes put each sandbox in a cgroup where they can, which catches
// those (procsandbox).
package initproc

import "time"

// StopGrace is how long, once the server has exited, the processes left in
// the namespace have to exit after SIGTERM before init exits (and the kernel
// kills them).
const StopGrace = 5 * time.Second
