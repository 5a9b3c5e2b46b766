//! What Linux `/proc` says of a process tree: the pids (the root and every descendant), and
//! the sum of their CPU time, resident memory and storage I/O. One [`TreeReader`] is kept per
//! sampler and its buffers reused, so a sample allocates next to nothing.

use std::fmt::Write as _;
use std::fs::File;
use std::io::Read;

/// Fields of `/proc/<pid>/stat` the sampler uses (clock ticks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stat {
    pub ppid: u32,
    pub utime: u64,
    pub stime: u64,
    /// CPU of children this process waited for: a reaped child's time is not lost.
    pub cutime: u64,
    pub cstime: u64,
}

/// Parses `/proc/<pid>/stat`. The command name (field 2) may hold spaces and parentheses,
/// so the fields are read after the last `)`.
pub fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let mut f = rest.split_whitespace();
    // Fields 3 (state) and 4 (ppid), then 14-17 (utime, stime, cutime, cstime).
    let ppid = f.nth(1)?.parse().ok()?;
    let mut f = f.skip(9);
    let mut tick = || -> Option<u64> {
        // cutime/cstime are signed in the kernel's format.
        let v: i64 = f.next()?.parse().ok()?;
        Some(v.max(0) as u64)
    };
    Some(Stat {
        ppid,
        utime: tick()?,
        stime: tick()?,
        cutime: tick()?,
        cstime: tick()?,
    })
}

/// `VmRSS` of `/proc/<pid>/status` in bytes; `Some(0)` for a process without memory (a
/// zombie or kernel thread has no `VmRSS` line), `None` for text that is not a status file.
pub fn parse_status_rss(text: &str) -> Option<u64> {
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("VmRSS:") {
            let kib: u64 = v.split_whitespace().next()?.parse().ok()?;
            return Some(kib * 1024);
        }
    }
    text.starts_with("Name:").then_some(0)
}

/// `read_bytes` and `write_bytes` of `/proc/<pid>/io`: what reached the storage layer (not
/// the page cache's reads and writes, `rchar`/`wchar`).
pub fn parse_io(text: &str) -> (Option<u64>, Option<u64>) {
    let (mut r, mut w) = (None, None);
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("read_bytes:") {
            r = v.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("write_bytes:") {
            w = v.trim().parse().ok();
        }
    }
    (r, w)
}

/// The sum over a process tree at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TreeUsage {
    pub processes: u32,
    pub user_seconds: f64,
    pub system_seconds: f64,
    pub rss_bytes: u64,
    /// `None` when any process's `io` file could not be read (another user's process): a
    /// partial sum would read as less I/O than there was.
    pub read_bytes: Option<u64>,
    pub write_bytes: Option<u64>,
}

/// Reads process trees from `/proc`, its buffers reused from one sample to the next.
pub struct TreeReader {
    proc: String,
    buf: String,
    path: String,
    pids: Vec<u32>,
    stack: Vec<u32>,
    ticks_per_second: f64,
}

impl Default for TreeReader {
    fn default() -> Self {
        Self::new("/proc")
    }
}

impl TreeReader {
    /// A reader of the proc filesystem mounted at `proc`.
    pub fn new(proc: &str) -> TreeReader {
        // SAFETY: sysconf only reads a configuration value.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        TreeReader {
            proc: proc.to_string(),
            buf: String::with_capacity(4096),
            path: String::with_capacity(64),
            pids: Vec::with_capacity(16),
            stack: Vec::with_capacity(16),
            ticks_per_second: if hz > 0 { hz as f64 } else { 100.0 },
        }
    }

    /// Reads `<proc>/<pid>/<rest>` into the buffer; `false` when it cannot be read.
    fn read(&mut self, pid: u32, rest: &str) -> bool {
        self.path.clear();
        let _ = write!(self.path, "{}/{pid}/{rest}", self.proc);
        self.buf.clear();
        File::open(&self.path)
            .and_then(|mut f| f.read_to_string(&mut self.buf))
            .is_ok()
    }

    /// The root and all its descendants (the root first); empty when the root is gone.
    pub fn tree(&mut self, root: u32) -> &[u32] {
        self.pids.clear();
        self.stack.clear();
        if !self.read(root, "stat") {
            return &self.pids;
        }
        self.stack.push(root);
        while let Some(p) = self.stack.pop() {
            self.pids.push(p);
            if !self.push_children(p) {
                // No `children` files (a kernel without CONFIG_PROC_CHILDREN): every
                // process's parent, from a scan of /proc.
                self.scan_tree(root);
                break;
            }
        }
        &self.pids
    }

    /// Pushes the children of every thread of `pid`; `false` when the kernel has no
    /// `task/<tid>/children` files.
    fn push_children(&mut self, pid: u32) -> bool {
        let dir = format!("{}/{pid}/task", self.proc);
        let Ok(tasks) = std::fs::read_dir(&dir) else {
            // The process is gone: nothing below it.
            return true;
        };
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            self.path.clear();
            let _ = write!(self.path, "{dir}/{tid}/children");
            self.buf.clear();
            match File::open(&self.path).and_then(|mut f| f.read_to_string(&mut self.buf)) {
                Ok(_) => {
                    let kids = self
                        .buf
                        .split_whitespace()
                        .filter_map(|s| s.parse::<u32>().ok());
                    self.stack.extend(kids);
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && tid == pid => {
                    // The leader's own task is there: the file itself is missing.
                    if std::path::Path::new(&dir).join(tid.to_string()).exists() {
                        return false;
                    }
                }
                Err(_) => {}
            }
        }
        true
    }

    /// The tree of `root` from the parent of every process in /proc.
    fn scan_tree(&mut self, root: u32) {
        let mut parents: Vec<(u32, u32)> = Vec::new();
        if let Ok(rd) = std::fs::read_dir(&self.proc) {
            for e in rd.flatten() {
                let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                    continue;
                };
                if self.read(pid, "stat") {
                    if let Some(s) = parse_stat(&self.buf) {
                        parents.push((pid, s.ppid));
                    }
                }
            }
        }
        self.pids.clear();
        self.pids.push(root);
        let mut i = 0;
        while i < self.pids.len() {
            let p = self.pids[i];
            self.pids
                .extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
            i += 1;
        }
    }

    /// The usage of `root`'s tree now; `None` when the root is gone.
    pub fn usage(&mut self, root: u32) -> Option<TreeUsage> {
        self.tree(root);
        if self.pids.is_empty() {
            return None;
        }
        let pids = std::mem::take(&mut self.pids);
        let mut u = TreeUsage {
            read_bytes: Some(0),
            write_bytes: Some(0),
            ..TreeUsage::default()
        };
        let (mut user, mut system) = (0u64, 0u64);
        for &p in &pids {
            // A process that ended between the walk and now is skipped (its parent's cutime
            // gets its CPU once it is reaped).
            if !self.read(p, "stat") {
                continue;
            }
            let Some(s) = parse_stat(&self.buf) else {
                continue;
            };
            user += s.utime + s.cutime;
            system += s.stime + s.cstime;
            u.processes += 1;
            if self.read(p, "status") {
                u.rss_bytes += parse_status_rss(&self.buf).unwrap_or(0);
            }
            let (r, w) = if self.read(p, "io") {
                parse_io(&self.buf)
            } else {
                (None, None)
            };
            u.read_bytes = u.read_bytes.zip(r).map(|(a, b)| a + b);
            u.write_bytes = u.write_bytes.zip(w).map(|(a, b)| a + b);
        }
        self.pids = pids;
        u.user_seconds = user as f64 / self.ticks_per_second;
        u.system_seconds = system as f64 / self.ticks_per_second;
        (u.processes > 0).then_some(u)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn stat_with_spaces_and_parentheses_in_the_name() {
        let text = "4242 (my (odd) name) S 17 4242 4242 0 -1 4194560 2316 0 0 0 155 37 4 -2 20 0 12 0 2345678 123456789 2048 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
        let s = parse_stat(text).unwrap();
        assert_eq!(
            s,
            Stat {
                ppid: 17,
                utime: 155,
                stime: 37,
                cutime: 4,
                cstime: 0
            }
        );
        // A name that ends in ") S 1 2" must not shift the fields.
        let tricky = "7 (a) S 1 2) R 99 7 7 0 -1 0 0 0 0 0 11 22 33 44 20 0 1 0 5 6 7\n";
        let s = parse_stat(tricky).unwrap();
        assert_eq!(
            (s.ppid, s.utime, s.stime, s.cutime, s.cstime),
            (99, 11, 22, 33, 44)
        );
        assert!(parse_stat("garbage").is_none());
        assert!(parse_stat("1 (x) S").is_none());
    }

    #[test]
    fn status_and_io() {
        let status = "Name:\tgreptime\nUmask:\t0022\nState:\tS (sleeping)\nVmPeak:\t 9000 kB\nVmHWM:\t  5000 kB\nVmRSS:\t    4321 kB\nRssAnon:\t 4000 kB\n";
        assert_eq!(parse_status_rss(status), Some(4321 * 1024));
        // A zombie has no VmRSS: it holds no memory.
        assert_eq!(parse_status_rss("Name:\tx\nState:\tZ (zombie)\n"), Some(0));
        assert_eq!(parse_status_rss("not a status file"), None);
        let io = "rchar: 100\nwchar: 200\nsyscr: 3\nsyscw: 4\nread_bytes: 8192\nwrite_bytes: 409600\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_io(io), (Some(8192), Some(409600)));
        assert_eq!(parse_io(""), (None, None));
    }

    /// Kills and reaps the child on the way out, also when an assertion fails.
    struct Reap(std::process::Child);
    impl Drop for Reap {
        fn drop(&mut self) {
            let pid = nix::unistd::Pid::from_raw(self.0.id() as i32);
            // The grandchildren first: they are in the child's process group.
            let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    #[test]
    fn the_tree_holds_children_and_grandchildren() {
        use std::os::unix::process::CommandExt;
        let child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30 & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let child = Reap(child);
        let root = child.0.id();
        let mut r = TreeReader::default();
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut seen = Vec::new();
        while Instant::now() < deadline {
            seen = r.tree(root).to_vec();
            // A forked child is "sh" until it has exec'd sleep.
            let execd = seen.iter().skip(1).all(|p| {
                std::fs::read_to_string(format!("/proc/{p}/stat"))
                    .is_ok_and(|s| s.contains("(sleep)"))
            });
            if seen.len() >= 3 && execd {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(seen.first(), Some(&root), "{seen:?}");
        assert_eq!(seen.len(), 3, "sh and both sleeps: {seen:?}");
        for p in &seen[1..] {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap();
            assert!(stat.contains("(sleep)"), "{stat}");
            assert_eq!(parse_stat(&stat).unwrap().ppid, root);
        }
        // The ppid scan (kernels without `children` files) finds the same tree.
        r.scan_tree(root);
        let mut scanned = r.pids.clone();
        scanned.sort();
        seen.sort();
        assert_eq!(scanned, seen);
        let u = r.usage(root).unwrap();
        assert_eq!(u.processes, 3);
        assert!(u.rss_bytes > 0);
        // Our own children: their io files are readable.
        assert!(u.read_bytes.is_some() && u.write_bytes.is_some());
        assert!(r.usage(u32::MAX - 1).is_none());
    }

    #[test]
    fn unreadable_io_is_unknown_not_zero() {
        // A fake /proc: one process whose io file is missing.
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("5");
        std::fs::create_dir_all(p.join("task/5")).unwrap();
        std::fs::write(p.join("task/5/children"), "").unwrap();
        std::fs::write(
            p.join("stat"),
            "5 (srv) S 1 5 5 0 -1 0 0 0 0 0 200 100 0 0 20 0 1 0 5 6 7\n",
        )
        .unwrap();
        std::fs::write(p.join("status"), "Name:\tsrv\nVmRSS:\t10 kB\n").unwrap();
        let mut r = TreeReader::new(d.path().to_str().unwrap());
        r.ticks_per_second = 100.0;
        let u = r.usage(5).unwrap();
        assert_eq!((u.processes, u.rss_bytes), (1, 10 * 1024));
        assert_eq!((u.user_seconds, u.system_seconds), (2.0, 1.0));
        assert_eq!((u.read_bytes, u.write_bytes), (None, None));
    }
}
