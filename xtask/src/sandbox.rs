//! The grader's sandbox: Debian's `bubblewrap` (`bwrap`) around every build and test
//! run of a submission, and kernel limits on what runs inside.
//!
//! The sandbox sees a read-only system (`/usr`, `/etc`), the Rust toolchain and
//! `CARGO_HOME` (read-only: cargo runs `--offline --locked`), libtorch (read-only),
//! the grading copy of the workspace (read-only) and, for a build only, its build
//! folder; its only other writable place is a small `/tmp` in memory. It has no
//! network (its own network namespace holds nothing but a loopback), its own process
//! namespace (`--die-with-parent`: when the grader kills the sandbox, everything in
//! it dies), and none of the teacher's home, the answer key or the other submissions,
//! which are simply not mounted.
//!
//! Inside, the command runs as a dedicated user id ([`Sandbox::uid`]) with no
//! capabilities and `no_new_privs`, under `prlimit`: CPU seconds, file size (which
//! also caps the captured output: stdout and stderr go to a file), processes and
//! threads. The process limit is why the user id is not root's: the kernel exempts
//! root from `RLIMIT_NPROC`, even in a user namespace, so a fork bomb run as root
//! would meet no limit (tried: 60 children under `ulimit -u 20`). The grader polls the
//! resident memory of every process of that user id for the memory limit.
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// What the grader says when the sandbox cannot be made.
pub const HOW_TO_GET_IT: &str = "the grader runs each submission in a bubblewrap sandbox \
and cannot make one here. On Debian or Ubuntu: `apt-get install bubblewrap` (it also \
needs `setpriv` and `prlimit`, from util-linux, and must run as root to switch to the \
sandbox's user id). To grade without a sandbox anyway, with your rights, pass \
--unsafe-no-sandbox";

/// The user id the sandboxed code runs as: no account owns it, so the kernel's count
/// of its processes is the sandbox's alone.
pub const DEFAULT_UID: u32 = 61041;

/// Kernel limits for one sandboxed command.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub cpu_secs: u64,
    /// The largest file it may write, captured output included.
    pub file_mb: u64,
    /// Processes and threads of the sandbox's user id.
    pub procs: u64,
}

/// A sandbox: what it may read and write.
#[derive(Debug, Clone)]
pub struct Sandbox {
    pub uid: u32,
    /// Mounted read-only, at the same path.
    pub read_only: Vec<PathBuf>,
    /// Mounted writable, at the same path.
    pub writable: Vec<PathBuf>,
    /// Folders inside those mounts replaced by an empty one.
    pub hidden: Vec<PathBuf>,
    /// The size of the sandbox's `/tmp`, in MB.
    pub tmp_mb: u64,
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// Fails, saying how to get it, when a sandbox cannot be made here.
pub fn check() -> Result<()> {
    for tool in ["bwrap", "setpriv", "prlimit"] {
        if which(tool).is_none() {
            bail!("`{tool}` is not installed: {HOW_TO_GET_IT}");
        }
    }
    let probe = Sandbox {
        uid: DEFAULT_UID,
        read_only: vec![],
        writable: vec![],
        hidden: vec![],
        tmp_mb: 1,
    };
    let limits = Limits {
        cpu_secs: 10,
        file_mb: 1,
        procs: 16,
    };
    let out = probe
        .command(Path::new("/usr/bin/true"), &[], Path::new("/"), &[], limits)
        .stdin(Stdio::null())
        .output()
        .context("cannot start bwrap")?;
    if !out.status.success() {
        bail!(
            "bwrap does not work here ({}): {HOW_TO_GET_IT}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Every folder above `p`, outermost first (`/` left out).
fn ancestors(p: &Path) -> Vec<PathBuf> {
    let mut up: Vec<PathBuf> = p
        .ancestors()
        .skip(1)
        .filter(|a| a.parent().is_some())
        .map(Path::to_path_buf)
        .collect();
    up.reverse();
    up
}

impl Sandbox {
    /// The `bwrap` arguments that build the sandbox's file system and namespaces.
    pub fn bwrap_args(&self) -> Vec<OsString> {
        let mut a: Vec<OsString> = Vec::new();
        let mut push = |items: &[&dyn AsRef<std::ffi::OsStr>]| {
            a.extend(items.iter().map(|i| i.as_ref().to_os_string()))
        };
        push(&[&"--ro-bind", &"/usr", &"/usr"]);
        for (link, to) in [
            ("/bin", "usr/bin"),
            ("/sbin", "usr/sbin"),
            ("/lib", "usr/lib"),
            ("/lib64", "usr/lib64"),
        ] {
            push(&[&"--symlink", &to, &link]);
        }
        push(&[&"--ro-bind", &"/etc", &"/etc"]);
        push(&[&"--proc", &"/proc", &"--dev", &"/dev"]);
        let tmp_bytes = (self.tmp_mb << 20).to_string();
        push(&[
            &"--perms", &"1777", &"--size", &tmp_bytes, &"--tmpfs", &"/tmp",
        ]);
        // bwrap makes a mount point's missing parents 0700, which the sandbox's user
        // could not cross: make them 0755 first (they are empty folders). Inside
        // the fresh /tmp too, where a course cloned under /tmp lives; /tmp itself
        // keeps its 1777.
        let mut made = std::collections::BTreeSet::new();
        for p in self.read_only.iter().chain(&self.writable) {
            for dir in ancestors(p) {
                let skip = dir == Path::new("/tmp")
                    || ["/usr", "/etc", "/proc", "/dev"]
                        .iter()
                        .any(|s| dir.starts_with(s));
                if !skip && made.insert(dir.clone()) {
                    push(&[&"--perms", &"0755", &"--dir", &dir]);
                }
            }
        }
        for p in &self.read_only {
            push(&[&"--ro-bind", p, p]);
        }
        for p in &self.writable {
            push(&[&"--bind", p, p]);
        }
        for p in &self.hidden {
            push(&[&"--tmpfs", p, &"--remount-ro", p]);
        }
        push(&[
            &"--unshare-ipc",
            &"--unshare-pid",
            &"--unshare-net",
            &"--unshare-uts",
            &"--unshare-cgroup-try",
            &"--die-with-parent",
            &"--new-session",
            // Only what `setpriv` needs to become the sandbox's user; it has none
            // left after that, and bwrap sets no_new_privs.
            &"--cap-drop",
            &"ALL",
            &"--cap-add",
            &"CAP_SETUID",
            &"--cap-add",
            &"CAP_SETGID",
            &"--clearenv",
        ]);
        a
    }

    /// `program args` in the sandbox, in `dir`, with only the variables `env` (and
    /// `PATH`, `HOME=/tmp`, `TMPDIR=/tmp`), under `limits`.
    pub fn command(
        &self,
        program: &Path,
        args: &[OsString],
        dir: &Path,
        env: &[(String, OsString)],
        limits: Limits,
    ) -> Command {
        let mut cmd = Command::new("bwrap");
        cmd.args(self.bwrap_args());
        let path = std::env::var_os("PATH").unwrap_or_default();
        cmd.arg("--setenv").arg("PATH").arg(path);
        for (k, v) in [("HOME", "/tmp"), ("TMPDIR", "/tmp")] {
            cmd.args(["--setenv", k, v]);
        }
        for (k, v) in env {
            cmd.arg("--setenv").arg(k).arg(v);
        }
        cmd.arg("--chdir").arg(dir).arg("--");
        let id = self.uid.to_string();
        cmd.args([
            "setpriv",
            "--reuid",
            &id,
            "--regid",
            &id,
            "--clear-groups",
            "--",
        ]);
        let lim = |n: u64| format!("{n}:{n}");
        cmd.arg("prlimit")
            .arg(format!("--cpu={}", lim(limits.cpu_secs)))
            .arg(format!("--fsize={}", lim(limits.file_mb << 20)))
            .arg(format!("--nproc={}", lim(limits.procs)))
            .arg("--core=0:0")
            .arg("--")
            .arg(program)
            .args(args);
        cmd
    }
}

/// The processes of user id `uid` on this machine.
pub fn processes_of(uid: u32) -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return vec![];
    };
    let mut found = vec![];
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse().ok())
        else {
            continue;
        };
        let Ok(status) = fs::read_to_string(e.path().join("status")) else {
            continue;
        };
        if field(&status, "Uid:") == Some(uid as u64) {
            found.push(pid);
        }
    }
    found
}

/// The first number after `name` in a /proc file's lines.
fn field(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
}

/// What the processes of user id `uid` hold: memory in MB, proportional (a page
/// that n processes share counts 1/n to each, so that forked copies of one test
/// process are not charged n times for the libraries they share), and their tasks
/// (processes and threads, what `RLIMIT_NPROC` counts).
pub fn usage_of(uid: u32) -> (u64, u64) {
    let (mut kb, mut tasks) = (0, 0);
    for pid in processes_of(uid) {
        let at = Path::new("/proc").join(pid.to_string());
        let rollup =
            fs::read_to_string(at.join("smaps_rollup")).unwrap_or_default();
        kb += field(&rollup, "Pss:").unwrap_or(0);
        let status = fs::read_to_string(at.join("status")).unwrap_or_default();
        tasks += field(&status, "Threads:").unwrap_or(1);
    }
    (kb / 1024, tasks)
}

/// Gives the build folder to the sandbox's user (cargo there writes as that user),
/// recursively, without following links.
pub fn give(dir: &Path, uid: u32) -> Result<()> {
    let status = Command::new("chown")
        .args(["-R", "-h", &format!("{uid}:{uid}")])
        .arg(dir)
        .status()
        .context("cannot run chown")?;
    if !status.success() {
        bail!("cannot give {} to user id {uid}", dir.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A course cloned under /tmp: the folders between the sandbox's fresh /tmp
    /// and the workspace are made crossable (0755), /tmp itself is left 1777.
    #[test]
    fn a_workspace_under_tmp_is_reachable() {
        let sandbox = Sandbox {
            uid: 61041,
            read_only: vec![PathBuf::from("/tmp/clone/.libtorch")],
            writable: vec![PathBuf::from(
                "/tmp/clone/target/mutants/workspace",
            )],
            hidden: vec![],
            tmp_mb: 256,
        };
        let args: Vec<String> = sandbox
            .bwrap_args()
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let made: Vec<&str> = args
            .windows(2)
            .filter(|w| w[0] == "--dir")
            .map(|w| w[1].as_str())
            .collect();
        for dir in [
            "/tmp/clone",
            "/tmp/clone/target",
            "/tmp/clone/target/mutants",
        ] {
            assert!(made.contains(&dir), "{dir} is not made 0755: {made:?}");
        }
        assert!(
            !made.contains(&"/tmp"),
            "/tmp would lose its 1777: {made:?}"
        );
        let tmpfs = args.iter().position(|a| a == "/tmp").unwrap();
        let first_dir = args.iter().position(|a| a == "--dir").unwrap();
        assert!(
            tmpfs < first_dir,
            "the folders must be made inside the new /tmp"
        );
    }
}
