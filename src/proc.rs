//! Child processes, one way for everybody (the server supervisor, the TSBS tools, the data and
//! query generators, `go` and `git`): spawned in their own process group with a parent-death
//! guard ([`configure`]), stopped as a group with SIGTERM, a grace period, then SIGKILL
//! ([`stop_group`]), waited for with a deadline while Ctrl-C is polled ([`wait`],
//! [`InterruptWatch`]), their output copied line by line through a redacting filter into a
//! log ([`pump`]), their command lines recorded shell-quoted ([`command_line`]), and what
//! `/proc` says of a process: its start time, CPU time, whether it is a zombie.
//!
//! Threads, not tokio: every caller is synchronous, a child needs at most a waiter and two
//! pipe readers, and cancellation is one polled flag (`crate::interrupt`), so the declared but
//! unused tokio dependency was removed rather than adopted (review §4).

use std::borrow::Cow;
use std::fs::File;
use std::io::{Read, Write};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// How long [`wait`] and [`InterruptWatch`] sleep between two looks at the child.
const POLL: Duration = Duration::from_millis(20);

/// Own process group (so a stop reaches the child's helpers too); on Linux, SIGKILL when
/// tsbsctl dies, even by SIGKILL.
///
/// The parent-death signal fires when the *thread* that spawned the child exits: spawn from
/// a thread that outlives the child.
pub fn configure(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
    #[cfg(target_os = "linux")]
    {
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: only async-signal-safe calls (prctl, getppid) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent may have died before prctl took effect.
                if libc::getppid() != parent {
                    return Err(std::io::Error::other("tsbsctl exited during the start"));
                }
                Ok(())
            });
        }
    }
}

/// Sends `sig` to the process group `pgid` (a group [`configure`] created, or one recorded as
/// ours). Group 0 and 1 are never signalled: they would mean "our own group" and "everybody".
pub fn signal_group(pgid: u32, sig: Signal) {
    if pgid > 1 && pgid <= i32::MAX as u32 {
        let _ = killpg(Pid::from_raw(pgid as i32), sig);
    }
}

/// SIGTERM to the child's group, up to `grace` for it to exit, then SIGKILL; always reaps the
/// child. Returns true when SIGKILL was needed.
pub fn stop_group(child: &mut Child, grace: Duration) -> bool {
    let pgid = child.id();
    if let Ok(Some(_)) = child.try_wait() {
        // Helpers the child may have left in its group go too.
        signal_group(pgid, Signal::SIGKILL);
        return false;
    }
    signal_child(child, Signal::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            signal_group(pgid, Signal::SIGKILL);
            return false;
        }
        std::thread::sleep(POLL);
    }
    signal_child(child, Signal::SIGKILL);
    let _ = child.wait();
    true
}

/// Signals the group of a child that has not been reaped yet; a child spawned without
/// [`configure`] (no group of its own) gets the signal itself.
fn signal_child(child: &Child, sig: Signal) {
    let pid = child.id();
    if pid > 1 && pid <= i32::MAX as u32 && killpg(Pid::from_raw(pid as i32), sig).is_err() {
        let _ = nix::sys::signal::kill(Pid::from_raw(pid as i32), sig);
    }
}

/// How [`wait`] ended. Every case but `Exited` stopped the child's group first.
#[derive(Debug)]
pub enum Waited<T> {
    Exited(ExitStatus),
    /// Ctrl-C / SIGTERM arrived.
    Interrupted,
    /// The deadline passed.
    TimedOut,
    /// `tick` asked to stop, for this reason.
    Stopped(T),
}

/// What [`wait`] watches besides the exit.
pub struct WaitFor {
    /// Stop the child when this much time has passed.
    pub limit: Option<Duration>,
    /// SIGTERM → SIGKILL grace when stopping.
    pub grace: Duration,
    /// How often `tick` runs.
    pub tick_every: Duration,
}

impl Default for WaitFor {
    fn default() -> Self {
        WaitFor {
            limit: None,
            grace: Duration::from_secs(2),
            tick_every: Duration::from_millis(200),
        }
    }
}

/// Waits for `child`, polling the interrupt flag, the deadline and (every `tick_every`)
/// `tick`; on any of them the child's group is stopped ([`stop_group`]) before returning.
pub fn wait<T>(
    child: &mut Child,
    w: &WaitFor,
    tick: &mut dyn FnMut() -> Option<T>,
) -> std::io::Result<Waited<T>> {
    let start = Instant::now();
    let mut last_tick = Instant::now();
    let mut pause = Duration::from_millis(2);
    // Sleep in poll(2) on a pidfd until the child exits or the next tick is due, instead of
    // waking every 20 ms: a load lasting hours then costs tsbsctl a few wakeups a second
    // (issue 27). Ctrl-C interrupts poll (EINTR), so it is seen at once either way.
    let pidfd = PidFd::open(child.id());
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Waited::Exited(status));
        }
        if crate::interrupt::requested() {
            stop_group(child, w.grace);
            return Ok(Waited::Interrupted);
        }
        if w.limit.is_some_and(|l| start.elapsed() > l) {
            stop_group(child, w.grace);
            return Ok(Waited::TimedOut);
        }
        if last_tick.elapsed() >= w.tick_every {
            last_tick = Instant::now();
            if let Some(reason) = tick() {
                stop_group(child, w.grace);
                return Ok(Waited::Stopped(reason));
            }
        }
        match &pidfd {
            Some(fd) => {
                let mut until = w.tick_every.saturating_sub(last_tick.elapsed());
                if let Some(l) = w.limit {
                    until = until.min(l.saturating_sub(start.elapsed()));
                }
                fd.wait_exit(until.max(Duration::from_millis(1)));
            }
            None => {
                std::thread::sleep(pause);
                // Short first sleeps so quick commands (`go version`) return at once.
                pause = (pause * 2).min(POLL);
            }
        }
    }
}

/// A pidfd (Linux 5.3+): readable once its process has exited.
struct PidFd(std::os::fd::OwnedFd);

impl PidFd {
    fn open(pid: u32) -> Option<PidFd> {
        use std::os::fd::FromRawFd;
        // SAFETY: pidfd_open(2) on a child we have not reaped (so the pid is still ours);
        // the fd is owned at once.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        (fd >= 0).then(|| PidFd(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) }))
    }

    /// Returns when the process has exited, a signal arrived, or `limit` passed.
    fn wait_exit(&self, limit: Duration) {
        use std::os::fd::AsRawFd;
        let mut p = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = limit.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one pollfd we own; the result only decides when the caller looks again.
        unsafe { libc::poll(&mut p, 1, ms) };
    }
}

/// Stops a child's group on Ctrl-C while the caller's thread is busy elsewhere (reading the
/// child's output to its end). [`InterruptWatch::finish`] must run before the child is
/// reaped, so the group id cannot have been reused.
pub struct InterruptWatch {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<bool>>,
}

impl InterruptWatch {
    /// Watches the group of `child` (spawned with [`configure`]).
    pub fn start(child: &Child, grace: Duration) -> InterruptWatch {
        let pgid = child.id();
        let done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&done);
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::SeqCst) {
                if crate::interrupt::requested() {
                    signal_group(pgid, Signal::SIGTERM);
                    let deadline = Instant::now() + grace;
                    while !flag.load(Ordering::SeqCst) && Instant::now() < deadline {
                        std::thread::sleep(POLL);
                    }
                    if !flag.load(Ordering::SeqCst) {
                        signal_group(pgid, Signal::SIGKILL);
                    }
                    return true;
                }
                std::thread::sleep(POLL);
            }
            false
        });
        InterruptWatch {
            done,
            thread: Some(thread),
        }
    }

    /// Ends the watch; true when it stopped the child because of an interrupt.
    pub fn finish(mut self) -> bool {
        self.done.store(true, Ordering::SeqCst);
        self.thread
            .take()
            .map(|t| t.join().unwrap_or(false))
            .unwrap_or(false)
    }
}

impl Drop for InterruptWatch {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Copies lines from `from` through `filter` (redaction) into `log` until EOF.
pub fn pump(
    from: impl Read + Send + 'static,
    filter: impl Fn(&str) -> String + Send + 'static,
    log: Arc<Mutex<File>>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        use std::io::BufRead;
        let mut r = std::io::BufReader::new(from);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf);
                    let out = filter(line.trim_end_matches(['\n', '\r']));
                    if let Ok(mut f) = log.lock() {
                        let _ = writeln!(f, "{out}");
                    }
                }
            }
        }
    })
}

/// One word of a recorded command line, quoted for a POSIX shell by shlex when it needs it.
/// Words of letters, digits and `-_=./,:@%+` stay bare: `=`, `,` and `%` are plain in an
/// argument (shlex quotes them for every position), and the recorded lines read
/// `--flag=value` as the tools' documentation does.
pub fn quote(word: &str) -> Cow<'_, str> {
    let bare = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_=./,:@%+".contains(&b));
    if bare {
        return Cow::Borrowed(word);
    }
    strict_quote(word)
}

/// shlex's quoting, for any position; a NUL (which no argv can hold) is shown as `\0`.
fn strict_quote(word: &str) -> Cow<'_, str> {
    match shlex::try_quote(word) {
        Ok(q) => q,
        Err(_) => Cow::Owned(
            shlex::try_quote(&word.replace('\0', "\\0"))
                .map(Cow::into_owned)
                .unwrap_or_default(),
        ),
    }
}

/// `program arg…` for logs and manifests, pasteable into a shell. The program is quoted
/// strictly (a bare `a=b` in first position would be an assignment).
pub fn command_line<S: AsRef<str>>(program: &str, args: &[S]) -> String {
    let mut out = strict_quote(program).into_owned();
    for a in args {
        out.push(' ');
        out.push_str(&quote(a.as_ref()));
    }
    out
}

/// The kernel's start time of `pid` (Linux: field 22 of `/proc/<pid>/stat`).
pub fn process_start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The command-line arguments of `pid` (Linux: `/proc/<pid>/cmdline`), lossily as text;
/// empty when the process is gone or unreadable.
pub fn argv(pid: u32) -> Vec<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    raw.split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// User plus system CPU time of `pid` in clock ticks (Linux: fields 14 and 15).
pub fn process_cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut f = rest.split_whitespace().skip(11);
    let utime: u64 = f.next()?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    Some(utime + stime)
}

/// True for a process that exited but was not reaped yet (Linux); it holds no port or file.
pub fn is_zombie(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    stat.rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next())
        .is_some_and(|state| state == "Z" || state == "X")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(quote("--a=b"), "--a=b");
        assert_eq!(
            quote("--auth-token=<redacted>"),
            "'--auth-token=<redacted>'"
        );
        assert_eq!(quote(""), "''");
        assert_eq!(quote("a b"), "'a b'");
        let q = quote("it's");
        assert_eq!(shlex::split(&q).unwrap(), vec!["it's".to_string()], "{q}");
        assert_eq!(
            command_line("/bin/x y", &["--n=1", "a;b"]),
            "'/bin/x y' --n=1 'a;b'"
        );
        assert_eq!(command_line("a=b", &[] as &[&str]), "'a=b'");
        // Whatever is quoted reads back as the same words.
        let words = ["--f=1,2", "$HOME", "x'y\"z", "tab\there", "ünï"];
        let line = command_line("p", &words);
        let back = shlex::split(&line).unwrap();
        assert_eq!(&back[1..], &words.map(String::from));
    }

    /// Processes of group `pgid` that are not zombies (Linux /proc).
    fn live_members(pgid: u32) -> usize {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
            .filter(|stat| {
                let rest = stat.rfind(')').map(|i| &stat[i + 1..]).unwrap_or("");
                let f: Vec<&str> = rest.split_whitespace().collect();
                f.len() > 2 && f[2] == pgid.to_string() && f[0] != "Z" && f[0] != "X"
            })
            .count()
    }

    #[test]
    fn wait_reports_exit_timeout_and_stop() {
        let spawn = |script: &str| {
            let mut c = Command::new("sh");
            c.args(["-c", script]);
            configure(&mut c);
            c.spawn().unwrap()
        };
        let quick = WaitFor {
            limit: Some(Duration::from_millis(300)),
            grace: Duration::from_millis(500),
            tick_every: Duration::from_millis(20),
        };
        let mut c = spawn("exit 3");
        let w = wait(&mut c, &quick, &mut || None::<()>).unwrap();
        assert!(
            matches!(w, Waited::Exited(s) if s.code() == Some(3)),
            "{w:?}"
        );

        // A child that ignores SIGTERM and leaves a grandchild: the group is killed.
        let mut c = spawn("trap '' TERM; sleep 30 & sleep 30");
        let t0 = Instant::now();
        let w = wait(&mut c, &quick, &mut || None::<()>).unwrap();
        assert!(matches!(w, Waited::TimedOut), "{w:?}");
        assert!(t0.elapsed() < Duration::from_secs(5));
        assert!(c.try_wait().unwrap().is_some(), "reaped");
        // The grandchild went with the group (at most a zombie waiting for its reaper).
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(live_members(c.id()), 0);

        let mut c = spawn("sleep 30");
        let mut n = 0;
        let w = wait(
            &mut c,
            &WaitFor {
                limit: None,
                ..quick
            },
            &mut || {
                n += 1;
                (n == 2).then_some("enough")
            },
        )
        .unwrap();
        assert!(matches!(w, Waited::Stopped("enough")), "{w:?}");
    }

    #[test]
    fn interrupt_watch_finishes_quietly_without_an_interrupt() {
        let mut c = Command::new("true");
        configure(&mut c);
        let mut child = c.spawn().unwrap();
        let watch = InterruptWatch::start(&child, Duration::from_millis(100));
        std::thread::sleep(Duration::from_millis(50));
        assert!(!watch.finish());
        assert!(child.wait().unwrap().success());
    }

    #[test]
    fn pump_writes_every_line_through_the_filter() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("log");
        let log = Arc::new(Mutex::new(File::create(&path).unwrap()));
        let input: &'static [u8] = b"token=abc\r\nplain\nlast without newline";
        pump(input, |l| l.replace("abc", "<redacted>"), log)
            .join()
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "token=<redacted>\nplain\nlast without newline\n"
        );
    }
}

/// The TCP addresses process `pid` listens on: the sockets among its open files that
/// `/proc/<pid>/net/tcp` and `tcp6` list in state LISTEN. `Err` when its files cannot be read
/// (another user's process without the right to look).
pub fn tcp_listeners(pid: u32) -> std::io::Result<Vec<std::net::SocketAddr>> {
    let mut inodes = std::collections::BTreeSet::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/fd"))? {
        let Ok(target) = std::fs::read_link(e?.path()) else {
            continue;
        };
        let t = target.to_string_lossy();
        if let Some(n) = t.strip_prefix("socket:[").and_then(|r| r.strip_suffix(']')) {
            if let Ok(n) = n.parse::<u64>() {
                inodes.insert(n);
            }
        }
    }
    let mut out = Vec::new();
    for table in ["tcp", "tcp6"] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")) else {
            continue;
        };
        out.extend(listening_in(&text, &inodes));
    }
    out.sort();
    Ok(out)
}

/// The LISTEN entries (state `0A`) of a `/proc/net/tcp{,6}` table whose inode is in `inodes`.
fn listening_in(
    table: &str,
    inodes: &std::collections::BTreeSet<u64>,
) -> Vec<std::net::SocketAddr> {
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (local, state, inode) = (f.get(1)?, f.get(3)?, f.get(9)?.parse::<u64>().ok()?);
            (*state == "0A" && inodes.contains(&inode)).then_some(())?;
            parse_proc_addr(local)
        })
        .collect()
}

/// `0100007F:3E80` (IPv4) or 32 hex digits and a port (IPv6): the kernel prints each 32-bit
/// word of the address in host byte order.
fn parse_proc_addr(s: &str) -> Option<std::net::SocketAddr> {
    let (addr, port) = s.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let words: Vec<u32> = (0..addr.len() / 8)
        .map(|i| u32::from_str_radix(&addr[i * 8..i * 8 + 8], 16).map(u32::from_be))
        .collect::<std::result::Result<_, _>>()
        .ok()?;
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
    let ip: std::net::IpAddr = match bytes.len() {
        4 => std::net::Ipv4Addr::from(<[u8; 4]>::try_from(&bytes[..]).ok()?).into(),
        16 => std::net::Ipv6Addr::from(<[u8; 16]>::try_from(&bytes[..]).ok()?).into(),
        _ => return None,
    };
    Some(std::net::SocketAddr::new(ip, port))
}

#[cfg(test)]
mod listener_tests {
    use super::*;

    #[test]
    fn proc_addresses_in_host_byte_order() {
        assert_eq!(
            parse_proc_addr("0100007F:3E80").unwrap().to_string(),
            "127.0.0.1:16000"
        );
        assert_eq!(
            parse_proc_addr("00000000:0050").unwrap().to_string(),
            "0.0.0.0:80"
        );
        assert_eq!(
            parse_proc_addr("00000000000000000000000000000000:1F90")
                .unwrap()
                .to_string(),
            "[::]:8080"
        );
        assert_eq!(
            parse_proc_addr("00000000000000000000000001000000:1F90")
                .unwrap()
                .to_string(),
            "[::1]:8080"
        );
    }

    /// A listener this test opens is found among its own sockets, with its address.
    #[test]
    fn this_process_listeners_are_found() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let found = tcp_listeners(std::process::id()).unwrap();
        assert!(found.contains(&addr), "{found:?} lacks {addr}");
    }
}
