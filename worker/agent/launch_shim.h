// SPDX-License-Identifier: Apache-2.0
// The remote-shell agent that mpirun / mpiexec use on the launcher worker
// (docs/design/run-lifecycle.md#launch). mpirun calls it like ssh:
//
//   <agent> [ssh options] HOST COMMAND [ARGS...]
//
// It maps HOST (an alias the launcher chose for a peer worker) to that
// worker's Agent address, takes the remote command apart into an argv the
// way the remote shell would (shell_words.h: quoting is undone, anything
// that would need a shell is refused), calls Exec there with that argv and
// the run's token, relays the remote stdout/stderr to its own, and exits with the remote exit code, or
// 255 with one line on stderr when the agent cannot be reached or refuses
// (as ssh does). SIGTERM, SIGINT or SIGHUP cancel the call; the remote side
// then kills the command's process group. If the shim is SIGKILLed the
// connection drops, which cancels the call just the same. stdin is not
// watched: hydra feeds mpiexec's own stdin to proxy 0 through the agent's
// stdin, so its EOF is normal there, not a teardown (and Open MPI gives the
// agent /dev/null).
//
// Environment, set by the launcher for mpirun (which passes it on to the
// agent); nothing of it is forwarded with Exec:
//   COLLBENCH_RUN             the run's name, "runs/{id}"
//   COLLBENCH_RUN_TOKEN_FILE  a file (mode 0600, in the run's private
//                             directory) holding the run's token: the token
//                             itself is in no environment and no argv
//   COLLBENCH_HOSTMAP         "alias1=host:port,alias2=host:port": alias →
//                             Agent address ("[::1]:port" for IPv6)
//
// What mpirun and mpiexec pass, and the flags the launcher needs (observed
// with Open MPI 4.1.4 and MPICH 4.0.2 hydra on Debian bookworm; the tests in
// tests/unit/agent/launch_e2e_test.cc run both, collbench-rank included):
//
// Open MPI: `mpirun --mca plm_rsh_agent "<worker> launch-shim" ...` (the
//   value is split on spaces, so extra words are fine). Each daemon launch
//   is `<agent> ALIAS " orted" -mca ess "env" ... -mca orte_hnp_uri
//   "...;tcp://IP:PORT" ...`: the words carry shell quoting meant for the
//   remote shell (which ssh would hand them to); the shim undoes it with
//   SplitShellWords. The first word starts with a space. `-x` is added only
//   when the agent's basename is "ssh". The agent's stdin is /dev/null.
//   Started by its absolute path, mpirun puts `PATH=<prefix>/bin:$PATH ;
//   export PATH ; ...` in front of orted, which only a shell could run:
//   --noprefix leaves that out. Recommended flags:
//     --noprefix --mca plm_rsh_agent "<worker> launch-shim"
//     --mca plm_rsh_no_tree_spawn 1 --mca orte_leave_session_attached 1
//     -H <launcher hostname>:N,w1:N,w2:N   (or a hostfile with slots=N)
//     --allow-run-as-root                  (containers running as root)
//     --mca oob_tcp_if_include / btl_tcp_if_include CIDR  (several networks)
//   Local or remote: a host is started locally (no agent) when it is
//   mpirun's own hostname, "localhost", or resolves to an address of a
//   local interface. Aliases that do not resolve at all are fine (mpirun
//   never connects to a remote host by name), and so are aliases that
//   resolve to 127.0.0.x with x != 1 (not an interface address): both are
//   remote.
//   No tree spawn: mpirun launches every daemon itself. (With the default
//   tree spawn mpirun launches up to routed_radix=64 daemons and those
//   launch the rest through the shim on their own host; Exec forwards
//   COLLBENCH_* so that works too, but one level is simpler.) With no tree
//   spawn Open MPI adds `--daemonize` to orted: it forks, calls setsid and
//   the Exec returns at once. The daemon then escapes the process group
//   that Exec kills, and worse, Exec's clean-up of the group when its
//   leader exits races with the daemon's setsid and can kill it, leaving
//   mpirun waiting forever (both observed). orte_leave_session_attached 1
//   (= --leave-session-attached) removes --daemonize: orted stays in the
//   group and the Exec call lasts as long as the daemon. Always pass it.
//   Several orted of one job on ONE machine (tests only) share the session
//   directory /tmp/ompi.HOST.UID/jf.N and race on creating it ("mkdir ...
//   File exists"), on its hwloc.sm (orted crashes in
//   hwloc_shmem_topology_write) and on PMIx's dstore ("PMIX ERROR ...
//   dstore_base.c"): give each daemon its own OMPI_MCA_orte_tmpdir_base.
//   Teardown: SIGTERM or SIGKILL of mpirun makes the orteds exit (their
//   lifeline to mpirun breaks), so the Exec calls end and the shims exit;
//   killing a shim makes mpirun abort the job.
//   orted puts each rank in a process group of its own: killing the Exec
//   group alone would orphan ranks, so Process::Kill sends SIGTERM first
//   (orted stops its ranks) and then SIGKILLs the whole tree.
//
// MPICH hydra: `mpiexec -launcher ssh -launcher-exec PATH ...`. PATH is
//   exec'd as one word (a space in it is not split), so the launcher passes
//   a symbolic link to the worker binary named collbench-launch-shim
//   (kShimLinkName): the binary runs the shim when called by that name.
//   Each proxy launch is `PATH -x ALIAS "/usr/bin/hydra_pmi_proxy"
//   --control-port HOST:PORT ... --proxy-id N`. The proxies connect back to
//   HOST, by default the launcher's hostname, which must then resolve on
//   the peers; `-localhost <launcher IP>` puts the IP there instead (pass
//   it in containers). Recommended flags:
//     -launcher ssh -launcher-exec <wrapper> -localhost <launcher IP>
//     -hosts <launcher hostname>:N,w1:N,w2:N
//     -iface IFACE                      (several networks)
//   Local or remote as for Open MPI (the local host is forked, not passed
//   to the agent). The agent's stdin is a pipe (proxy 0 gets mpiexec's
//   stdin). hydra_pmi_proxy, like orted, gives each rank its own process
//   group; killing a shim (SIGTERM) kills its proxy and ranks through Exec
//   and mpiexec fails with "control_cb ... assert (!closed) failed".
#ifndef COLLBENCH_WORKER_AGENT_LAUNCH_SHIM_H_
#define COLLBENCH_WORKER_AGENT_LAUNCH_SHIM_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/security/credentials.h"

namespace collbench {

// How the one line the shim writes on stderr when it fails begins (the
// launcher puts that line first in a failed run's error).
inline constexpr char kShimErrorPrefix[] = "collbench launch-shim: ";
inline constexpr char kRunEnv[] = "COLLBENCH_RUN";
inline constexpr char kRunTokenFileEnv[] = "COLLBENCH_RUN_TOKEN_FILE";
inline constexpr char kHostMapEnv[] = "COLLBENCH_HOSTMAP";
// A binary called by this name (argv[0]'s basename) is the launch shim.
inline constexpr char kShimLinkName[] = "collbench-launch-shim";
// The word after the worker binary that makes it the shim (plm_rsh_agent).
inline constexpr char kShimWord[] = "launch-shim";

// An ssh command line taken apart.
struct ShimCommand {
  std::string host;     // the alias, without any "user@"
  std::string command;  // the remaining words joined with single spaces
                        // (what ssh hands the remote shell)
};

// Parses ssh-style arguments (without argv[0]) as OpenSSH does: options
// before and right after the host (those taking a value, "-p 22", "-p22",
// "-o Key=V", consume it; unknown ones are taken as flags), "--" ends the
// options, the first word after the host that is not an option starts the
// command. InvalidArgument when there is no host or no command (a login
// shell is not supported).
absl::StatusOr<ShimCommand> ParseShimArgs(const std::vector<std::string>& args);

// "alias1=host:port,alias2=host:port" → {alias: address}. Blank entries are
// skipped; InvalidArgument naming the entry for one without '=' or with an
// empty alias or address, or for a repeated alias.
absl::StatusOr<std::map<std::string, std::string>> ParseHostMap(absl::string_view text);
// The inverse, for the launcher that sets COLLBENCH_HOSTMAP.
std::string FormatHostMap(const std::map<std::string, std::string>& host_map);

// What the shim needs from its environment.
struct ShimEnvironment {
  std::string run;
  std::string token;
  std::map<std::string, std::string> host_map;
};

// Reads COLLBENCH_RUN, COLLBENCH_HOSTMAP and the token from the file
// COLLBENCH_RUN_TOKEN_FILE names (one line, at most 4 KiB).
// FailedPrecondition naming the variable that is missing or malformed.
absl::StatusOr<ShimEnvironment> ReadShimEnvironment();

struct ShimOptions {
  // How long to wait for the peer's Agent to accept the connection.
  absl::Duration connect_timeout = absl::Seconds(10);
  // nullptr: insecure (plaintext) channel.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
};

// Runs one remote command: ParseShimArgs(args), SplitShellWords of the
// command, Exec of that argv on the agent of the host alias, relays output
// to fds 1 and 2. Returns the remote exit code, 255 when the command could
// not be run remotely (bad arguments, a word that needs a shell, unknown
// alias, agent unreachable or refusing), with one line on stderr.
int RunShim(const std::vector<std::string>& args, const ShimEnvironment& env,
            const ShimOptions& options);

// The agent entry point: argv[0] is ignored (collbench-worker's main calls
// it as RunLaunchShim(argc - 1, argv + 1) for `collbench-worker launch-shim
// ...`), argv[1..] are the ssh-style arguments. Reads the environment
// above, blocks SIGTERM/SIGINT/SIGHUP and cancels the call when one
// arrives (then returns 128 + that signal). Returns the process exit code.
int RunLaunchShim(int argc, char** argv);

// For main(): runs the shim when this process was called as one, either as
// `BINARY launch-shim ARGS...` (Open MPI's plm_rsh_agent) or through a link
// named kShimLinkName (MPICH's -launcher-exec), and returns its exit code;
// -1 when it was not.
int LaunchShimMain(int argc, char** argv);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_AGENT_LAUNCH_SHIM_H_
