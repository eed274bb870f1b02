// Package sandbox runs the processes that tools start (the run tool's shell
// commands, MCP stdio servers) confined to the agent's workspace.
//
// Probe chooses, once per node, the best sandbox that works on the host:
// bubblewrap ("bwrap": every namespace unshared, the system directories
// read-only, the workspace read-write at its own path, a private /tmp, no
// network), else Landlock with a seccomp filter ("landlock": the same file
// access rules enforced by the kernel without namespaces, sockets refused
// by seccomp), else none, with a Reason. Command never falls back to
// running a command unsandboxed: with no sandbox it returns an error
// wrapping ErrUnavailable, unless the Policy is Unsandboxed, which the
// caller sets only when the environment spec says `sandbox: none` and the
// node was started with --allow-unsandboxed.
//
// The path a `run` call takes under bwrap (no network, no output limit)
// starts no capsule process: Command returns bwrap itself, which loads the
// seccomp filter (--seccomp); a shell inside joins the command's cgroups
// through inherited descriptors and util-linux prlimit sets the rlimits and
// executes argv. The node creates the cgroups and removes them once the
// command has run; the wall time is a deadline on the Cmd's context; the
// pid namespace takes the whole tree down with bwrap. Starting the capsule
// binary costs more than all of bwrap here (its package initialisation
// alone takes tens of milliseconds), hence this path.
//
// Every other command is started by re-executing the capsule binary (the
// hidden verb Verb, which Main runs) as a small init in three stages. The supervisor,
// outside the sandbox, creates the command's cgroups (cgroup version 1
// pids and memory controllers, when writable) and private tmp directory,
// enforces Limits.Wall and Limits.OutputBytes, kills whatever the command
// leaves behind and removes what it created. The inner stage runs inside
// bwrap's namespaces; with network "hosts" it forwards 127.0.0.1:3128 to
// the node's egress Proxy through a unix socket bound into the sandbox.
// The exec stage joins the cgroups, sets rlimits (NPROC, AS, FSIZE, CPU),
// applies Landlock, drops capabilities and loads the seccomp filter
// (landlock mode; in bwrap mode only the filter, which refuses the kernel
// keyring and io_uring in both modes) and executes argv.
//
// What the limits bound: Wall the whole tree's life; OutputBytes stdout
// and stderr together; Processes the tree's processes (a pids cgroup; an
// RLIMIT_NPROC that root ignores); MemoryMB each process's address space
// and the tree's memory (memory cgroup); DiskMB every file's size and the
// size of the private /tmp. The workspace as a whole has no quota: the host
// file system offers none.
//
// With network "hosts", the command reaches only the listed host:port
// through the proxy (HTTPS_PROXY, HTTP_PROXY and ALL_PROXY are set): under
// bwrap it has no other network at all; under Landlock it may connect over
// TCP only to the proxy's port (Landlock ABI 4 or later; Command refuses
// the policy otherwise) and seccomp refuses every socket but AF_INET and
// AF_INET6 streams.
//
// The node imports this package; it starts processes and is not pure.
package sandbox
