//! A sidecar's process: started in a process group of its own, and
//! stopped with the run whichever way the run ends.
//!
//! - The run ends as it should, or fails: the [`Running`] guard kills the
//!   group when the fleet drops it (its shutdown, an error's unwinding).
//! - A second SIGINT or SIGTERM exits at once ([`crate::signals`]), a
//!   panic on the main thread ends the process: both kill every sidecar
//!   the process-wide registry holds ([`kill_all`]) first.
//! - Anything else that ends the process (`std::process::exit`, SIGKILL,
//!   an abort): each proxy is started through util-linux's `setpriv
//!   --pdeathsig KILL` when the machine has it (every Debian has), so
//!   the kernel kills it when its parent goes. Its parent is a thread of
//!   this process that lives as long as the process (the parent death
//!   signal follows the thread that started the child, not the process),
//!   which starts every sidecar.
//!
//! The group of its own keeps a Ctrl-C at the terminal (sent to the
//! terminal's foreground group) from reaching the proxies before this
//! process has read the run's last figures through them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Mutex, Once, OnceLock};

use rustix::process::{kill_process_group, Pid, Signal};

/// One running sidecar process, killed (with its group) when dropped, its
/// directory removed.
#[derive(Debug)]
pub(super) struct Running {
    id: u64,
    child: Child,
    dir: PathBuf,
}

/// Every sidecar process running, by its id: its process group and its
/// directory.
static LIVE: Mutex<Vec<(u64, u32, PathBuf)>> = Mutex::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(1);
static HOOK: Once = Once::new();

type Job = (
    Command,
    tokio::sync::oneshot::Sender<std::io::Result<Child>>,
);

/// The thread that starts every sidecar: it lives as long as the
/// process, so a parent death signal set on a child fires only when the
/// process ends.
fn spawner() -> &'static Mutex<mpsc::Sender<Job>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let started = std::thread::Builder::new()
            .name("chaoslab-sidecars".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            });
        if let Err(e) = started {
            eprintln!(
                "chaoslab: no thread to start sidecars from ({e}): they start from the caller's"
            );
        }
        Mutex::new(tx)
    })
}

/// Where util-linux's `setpriv` is, if the machine has it.
fn setpriv() -> Option<&'static Path> {
    static SETPRIV: OnceLock<Option<PathBuf>> = OnceLock::new();
    SETPRIV
        .get_or_init(|| super::find_program("setpriv", None).ok())
        .as_deref()
}

/// Starts `program args` in a process group of its own, its standard
/// output and error into `out` (a file in `dir`), to be killed with its
/// group on drop, on [`kill_all`], and (with `setpriv`) when this process
/// ends.
pub(super) async fn start(
    program: &Path,
    args: &[&std::ffi::OsStr],
    dir: &Path,
    out: std::fs::File,
) -> std::io::Result<Running> {
    install_hook();
    let mut cmd = match setpriv() {
        Some(setpriv) => {
            let mut c = Command::new(setpriv);
            c.args(["--pdeathsig", "KILL", "--"]).arg(program);
            c
        }
        None => Command::new(program),
    };
    cmd.args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let sent = spawner()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((cmd, tx));
    let child = match sent {
        Ok(()) => rx
            .await
            .map_err(|_| std::io::Error::other("the sidecars' thread is gone"))??,
        // No thread: start it from here (without the death signal's
        // guarantee, the guard and the registry still stop it).
        Err(mpsc::SendError((mut cmd, _))) => cmd.spawn()?,
    };
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((id, child.id(), dir.to_path_buf()));
    Ok(Running {
        id,
        child,
        dir: dir.to_path_buf(),
    })
}

impl Running {
    /// Its process id (its group's).
    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its exit status, if it has exited.
    pub(super) fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Its directory.
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        kill_group(self.child.id());
        let _ = self.child.kill();
        let _ = self.child.wait();
        LIVE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(id, _, _)| *id != self.id);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn kill_group(pid: u32) {
    if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = kill_process_group(pid, Signal::KILL);
    }
}

/// Kills every sidecar this process started that is still running (with
/// its process group) and removes their directories: for the ways out
/// that drop nothing (a second signal's exit, a panic on the main
/// thread). Their guards, dropped later if ever, find them gone.
pub fn kill_all() {
    let live = std::mem::take(&mut *LIVE.lock().unwrap_or_else(|e| e.into_inner()));
    for (_, pid, dir) in live {
        kill_group(pid);
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// How many sidecar processes this process has running.
pub fn running() -> usize {
    LIVE.lock().unwrap_or_else(|e| e.into_inner()).len()
}

/// A panic on the main thread ends the process: the sidecars go first.
/// (A panic elsewhere ends a task or a thread, and the run goes on; its
/// guards stop the sidecars they hold as they unwind.)
fn install_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() == Some("main") {
                kill_all();
            }
            previous(info);
        }));
    });
}
