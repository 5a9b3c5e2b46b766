//! The machine shape a managed server runs in: a cgroup of its own with CPU and memory limits
//! (`--cpus N`, `--memory SIZE`), so that a published shape (8 vCPU / 16 GB) can be reproduced
//! on a larger host and an out-of-memory kill can happen where it happened there.
//!
//! The group is created beneath the cgroup tsbsctl itself runs in, never at a hierarchy's
//! root, so every limit a parent sets still holds and a delegated subtree works. The server
//! joins it between fork and exec (its threads and children follow), and the group is removed
//! once the server is gone; a group left by a killed tsbsctl (named after its pid) is swept by
//! the next start. Where no group can be made (not root, no controller, cgroup v2 without a
//! delegated subtree), the command exits 2 with the reason before anything starts: a shape is
//! never pretended.
//!
//! cgroup v1 (`cpu.cfs_quota_us`, `cpuset.cpus`, `memory.limit_in_bytes`) and v2 (`cpu.max`,
//! `cpuset.cpus`, `memory.max`) are both written; v2 is read from source only here (this
//! machine and CI have v1).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// What `--cpus` and `--memory` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Shape {
    /// CPUs: a quota of this many CPUs' time, on the first `ceil(cpus)` CPUs tsbsctl may use.
    pub cpus: Option<f64>,
    /// Memory limit in bytes (swap included where the kernel accounts it).
    pub memory_bytes: Option<u64>,
}

impl Shape {
    pub fn is_empty(&self) -> bool {
        self.cpus.is_none() && self.memory_bytes.is_none()
    }
}

/// The CFS period the quota is a share of (the kernel's default).
const PERIOD_US: u64 = 100_000;
/// Below this a server cannot even start; refused as a mistake.
const MIN_MEMORY: u64 = 64 << 20;
/// Groups this tsbsctl makes: `tsbsctl-<pid>-<n>`.
const PREFIX: &str = "tsbsctl-";

/// One cgroup hierarchy as this process sees it.
#[derive(Debug, Clone, PartialEq)]
struct Hierarchy {
    /// v1: the controllers mounted there; v2: empty (controllers are per group).
    controllers: Vec<String>,
    v2: bool,
    /// Where tsbsctl's own group of this hierarchy is in the file system.
    own: PathBuf,
}

/// The cgroup hierarchies of this process, from `/proc/self/mountinfo` and `/proc/self/cgroup`.
fn hierarchies(mountinfo: &str, cgroup: &str) -> Vec<Hierarchy> {
    let mut out = Vec::new();
    for line in mountinfo.lines() {
        // id parent major:minor root mountpoint options [optional...] - fstype source super
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let f: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        if f.len() < 5 || r.len() < 3 {
            continue;
        }
        let (root, mount) = (unescape(f[3]), unescape(f[4]));
        let (fstype, sup) = (r[0], r[2]);
        let (v2, controllers): (bool, Vec<String>) = match fstype {
            "cgroup2" => (true, Vec::new()),
            "cgroup" => (
                false,
                sup.split(',')
                    .filter(|o| ["cpu", "cpuset", "memory", "cpuacct"].contains(o))
                    .map(String::from)
                    .collect(),
            ),
            _ => continue,
        };
        if !v2 && controllers.is_empty() {
            continue;
        }
        // Our group's path in this hierarchy, relative to the mount's root.
        let own_path = cgroup.lines().find_map(|l| {
            let mut p = l.splitn(3, ':');
            let (_, ctrls, path) = (p.next()?, p.next()?, p.next()?);
            let ok = if v2 {
                ctrls.is_empty()
            } else {
                ctrls.split(',').any(|c| controllers.iter().any(|x| x == c))
            };
            ok.then(|| path.to_string())
        });
        let Some(own_path) = own_path else { continue };
        let rel = if root == "/" {
            own_path.as_str()
        } else {
            own_path.strip_prefix(root.as_str()).unwrap_or("/")
        };
        out.push(Hierarchy {
            controllers,
            v2,
            own: Path::new(&mount).join(rel.trim_start_matches('/')),
        });
    }
    out
}

/// mountinfo escapes space, tab, newline and backslash as octal.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() {
            if let Ok(n) = u8::from_str_radix(&s[i + 1..i + 4], 8) {
                out.push(n);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A CPU list (`0-3,8`) as CPU numbers.
fn parse_cpu_list(s: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    out.extend(a..=b);
                }
            }
            None => out.extend(part.parse::<u32>().ok()),
        }
    }
    out
}

fn cpu_list(cpus: &[u32]) -> String {
    cpus.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn read(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

fn write(p: &Path, v: &str) -> Result<()> {
    std::fs::write(p, v).map_err(|e| {
        Error::invalid(format!("cannot set {} to {v}: {e}", p.display()))
            .with_hint("the cgroup refused the limit; a parent group may allow less")
    })
}

/// The group one server runs in, with what was set.
#[derive(Debug)]
pub struct Cgroup {
    /// One directory per hierarchy used (v1: cpu, cpuset, memory; v2: one).
    dirs: Vec<PathBuf>,
    /// The `cgroup.procs` files the server joins (v1: one per directory).
    procs: Vec<CString>,
    memory_dir: Option<PathBuf>,
    v2: bool,
    pub record: Record,
}

/// What a run records of its server's shape.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub hierarchy: String,
    pub groups: Vec<PathBuf>,
    pub cpus: Option<f64>,
    /// The CPUs the server may run on.
    pub cpuset: Option<String>,
    /// The CPU time quota per period, in microseconds.
    pub cpu_quota_us: Option<u64>,
    pub cpu_period_us: Option<u64>,
    /// The limit as the kernel holds it (rounded to its page size).
    pub memory_limit_bytes: Option<u64>,
    /// Swap is held to the same limit (v1 `memory.memsw`, v2 `memory.swap.max` = 0).
    pub swap_limited: Option<bool>,
}

impl Record {
    /// "1 CPU(s) on 0 and 512.0 MiB of memory, swap included (its own cgroup v1 group)".
    pub fn words(&self) -> String {
        let mut parts = Vec::new();
        if let Some(c) = self.cpus {
            parts.push(format!(
                "{c} CPU(s){}",
                self.cpuset
                    .as_deref()
                    .map(|s| format!(" on {s}"))
                    .unwrap_or_default()
            ));
        }
        if let Some(m) = self.memory_limit_bytes {
            parts.push(format!(
                "{} of memory{}",
                crate::diskspace::human(m),
                if self.swap_limited == Some(true) {
                    ", swap included"
                } else {
                    ""
                }
            ));
        }
        format!("{} (its own {} group)", parts.join(" and "), self.hierarchy)
    }
}

/// What can go: checks that a group of `shape` can be made here, without making one.
pub fn check(shape: &Shape) -> Result<()> {
    plan(shape).map(|_| ())
}

/// The hierarchies and values a group of `shape` needs, or why it cannot be had.
/// The CPUs a group may run on and its CPU-time quota per period (µs).
type CpuPlan = (Vec<u32>, u64);

fn plan(shape: &Shape) -> Result<(Vec<Hierarchy>, Option<CpuPlan>)> {
    if let Some(c) = shape.cpus {
        if !(c.is_finite() && c > 0.0) {
            return Err(Error::invalid(format!(
                "--cpus {c}: give a number of CPUs above 0"
            )));
        }
    }
    if let Some(m) = shape.memory_bytes {
        if m < MIN_MEMORY {
            return Err(Error::invalid(format!(
                "--memory {m} bytes is below 64 MiB, too little for any server"
            ))
            .with_hint("give a size such as 16GiB or 512MiB"));
        }
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let all = hierarchies(&mountinfo, &cgroup);
    let mut wanted: Vec<&str> = Vec::new();
    if shape.cpus.is_some() {
        wanted.extend(["cpu", "cpuset"]);
    }
    if shape.memory_bytes.is_some() {
        wanted.push("memory");
    }
    let v1: Vec<&Hierarchy> = all.iter().filter(|h| !h.v2).collect();
    let mut chosen: Vec<Hierarchy> = Vec::new();
    let mut missing = Vec::new();
    for w in &wanted {
        match v1.iter().find(|h| h.controllers.iter().any(|c| c == w)) {
            Some(h) if !chosen.contains(h) => chosen.push((*h).clone()),
            Some(_) => {}
            None => missing.push(*w),
        }
    }
    if !missing.is_empty() {
        // Not (all) on v1: the unified hierarchy must offer them to our group's children.
        let Some(h) = all.iter().find(|h| h.v2) else {
            return Err(Error::invalid(format!(
                "--cpus/--memory need the cgroup controller(s) {} and this host mounts none",
                missing.join(", ")
            ))
            .with_hint("run on a host with cgroups (Linux with cgroup v1 or v2 mounted), or leave out --cpus and --memory"));
        };
        let offered = read(&h.own.join("cgroup.controllers")).unwrap_or_default();
        let lacking: Vec<&str> = wanted
            .iter()
            .copied()
            .filter(|w| !offered.split_whitespace().any(|c| c == *w))
            .collect();
        if !lacking.is_empty() {
            return Err(Error::invalid(format!(
                "--cpus/--memory need the cgroup v2 controller(s) {} in {}, which offers only \"{offered}\"",
                lacking.join(", "),
                h.own.display()
            ))
            .with_hint("run tsbsctl in a delegated cgroup (for example `systemd-run --scope -p Delegate=yes tsbsctl ...`), or leave out --cpus and --memory"));
        }
        chosen = vec![h.clone()];
    }
    for h in &chosen {
        if !writable(&h.own) {
            return Err(Error::invalid(format!(
                "--cpus/--memory need a cgroup of the server's own under {}, and this user may not create one there",
                h.own.display()
            ))
            .with_hint("run as root, or in a cgroup subtree delegated to this user; or leave out --cpus and --memory"));
        }
    }
    let cpus = match shape.cpus {
        None => None,
        Some(c) => {
            let allowed = allowed_cpus(&chosen);
            let n = c.ceil() as usize;
            if n > allowed.len() {
                return Err(Error::invalid(format!(
                    "--cpus {c}: tsbsctl may use only {} CPU(s) here ({})",
                    allowed.len(),
                    cpu_list(&allowed)
                ))
                .with_hint("ask for at most that many, or run on a larger host"));
            }
            Some((allowed[..n].to_vec(), (c * PERIOD_US as f64).round() as u64))
        }
    };
    if let (Some(m), Some(total)) = (shape.memory_bytes, host_memory()) {
        if m > total {
            return Err(Error::invalid(format!(
                "--memory {m} bytes is more than this host has ({total} bytes)"
            ))
            .with_hint("a limit above the host's memory shapes nothing; ask for less"));
        }
    }
    Ok((chosen, cpus))
}

fn writable(dir: &Path) -> bool {
    let Ok(c) = CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access(2) on a valid C string.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// The CPUs tsbsctl's own group may run on (its cpuset), else every online CPU.
fn allowed_cpus(chosen: &[Hierarchy]) -> Vec<u32> {
    for h in chosen {
        if h.v2 || h.controllers.iter().any(|c| c == "cpuset") {
            for f in [
                "cpuset.effective_cpus",
                "cpuset.cpus.effective",
                "cpuset.cpus",
            ] {
                if let Some(s) = read(&h.own.join(f)).filter(|s| !s.is_empty()) {
                    return parse_cpu_list(&s);
                }
            }
        }
    }
    read(Path::new("/sys/devices/system/cpu/online"))
        .map(|s| parse_cpu_list(&s))
        .unwrap_or_default()
}

fn host_memory() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = s
        .lines()
        .find(|l| l.starts_with("MemTotal:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

impl Cgroup {
    /// Makes the group `tsbsctl-<our pid>-<n>` of `shape` (after sweeping groups of dead
    /// tsbsctl processes).
    pub fn create(shape: &Shape, n: u32) -> Result<Cgroup> {
        let (chosen, cpus) = plan(shape)?;
        let name = format!("{PREFIX}{}-{n}", std::process::id());
        let v2 = chosen.iter().any(|h| h.v2);
        let mut cg = Cgroup {
            dirs: Vec::new(),
            procs: Vec::new(),
            memory_dir: None,
            v2,
            record: Record {
                hierarchy: if v2 { "cgroup v2" } else { "cgroup v1" }.into(),
                groups: Vec::new(),
                cpus: shape.cpus,
                cpuset: None,
                cpu_quota_us: None,
                cpu_period_us: None,
                memory_limit_bytes: None,
                swap_limited: None,
            },
        };
        for h in &chosen {
            sweep_in(&h.own);
            let dir = h.own.join(&name);
            match std::fs::create_dir(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    cg.remove();
                    return Err(Error::invalid(format!(
                        "cannot create the server's cgroup {}: {e}",
                        dir.display()
                    ))
                    .with_hint("run as root or in a delegated cgroup subtree; or leave out --cpus and --memory"));
                }
            }
            cg.dirs.push(dir.clone());
            cg.record.groups.push(dir.clone());
            if let Err(e) = cg.configure(h, &dir, shape, cpus.as_ref()) {
                cg.remove();
                return Err(e);
            }
            if let Ok(c) = CString::new(dir.join("cgroup.procs").as_os_str().as_bytes()) {
                cg.procs.push(c);
            }
        }
        Ok(cg)
    }

    fn configure(
        &mut self,
        h: &Hierarchy,
        dir: &Path,
        shape: &Shape,
        cpus: Option<&CpuPlan>,
    ) -> Result<()> {
        let has = |c: &str| h.v2 || h.controllers.iter().any(|x| x == c);
        if h.v2 {
            // Controllers reach a child only through its parent's subtree_control.
            let mut enable = Vec::new();
            if cpus.is_some() {
                enable.extend(["+cpu", "+cpuset"]);
            }
            if shape.memory_bytes.is_some() {
                enable.push("+memory");
            }
            if let Err(e) = std::fs::write(h.own.join("cgroup.subtree_control"), enable.join(" ")) {
                return Err(Error::invalid(format!(
                    "cannot enable {} for the groups under {}: {e}",
                    enable.join(" "),
                    h.own.display()
                ))
                .with_hint("cgroup v2 lets a group with processes of its own give no controllers to children: run tsbsctl in a delegated scope (`systemd-run --scope -p Delegate=yes tsbsctl ...`), or leave out --cpus and --memory"));
            }
        }
        if let Some((list, quota)) = cpus {
            if has("cpuset") {
                let parent = h.own.as_path();
                if !h.v2 {
                    // v1: a cpuset group takes no task before its CPUs and memory nodes are set.
                    let mems = read(&parent.join("cpuset.mems")).unwrap_or_default();
                    write(&dir.join("cpuset.mems"), &mems)?;
                }
                write(&dir.join("cpuset.cpus"), &cpu_list(list))?;
                self.record.cpuset = read(&dir.join("cpuset.cpus"));
            }
            if has("cpu") {
                if h.v2 {
                    write(&dir.join("cpu.max"), &format!("{quota} {PERIOD_US}"))?;
                } else {
                    write(&dir.join("cpu.cfs_period_us"), &PERIOD_US.to_string())?;
                    write(&dir.join("cpu.cfs_quota_us"), &quota.to_string())?;
                }
                self.record.cpu_quota_us = Some(*quota);
                self.record.cpu_period_us = Some(PERIOD_US);
            }
        }
        if let Some(m) = shape.memory_bytes {
            if has("memory") {
                if h.v2 {
                    write(&dir.join("memory.max"), &m.to_string())?;
                    self.record.memory_limit_bytes =
                        read(&dir.join("memory.max")).and_then(|s| s.parse().ok());
                    let swap = dir.join("memory.swap.max");
                    self.record.swap_limited = Some(swap.exists() && write(&swap, "0").is_ok());
                } else {
                    write(&dir.join("memory.limit_in_bytes"), &m.to_string())?;
                    self.record.memory_limit_bytes =
                        read(&dir.join("memory.limit_in_bytes")).and_then(|s| s.parse().ok());
                    // A VM of that size has no more memory in swap either.
                    let sw = dir.join("memory.memsw.limit_in_bytes");
                    self.record.swap_limited =
                        Some(sw.exists() && write(&sw, &m.to_string()).is_ok());
                }
                self.memory_dir = Some(dir.to_path_buf());
            }
        }
        Ok(())
    }

    /// Moves the calling process into the group. Only for the child between fork and exec:
    /// open(2), write(2) and close(2), nothing that allocates.
    pub fn joiner(&self) -> impl Fn() -> std::io::Result<()> + Send + Sync + 'static {
        let procs = self.procs.clone();
        move || {
            for p in &procs {
                // SAFETY: async-signal-safe calls on C strings prepared before the fork.
                unsafe {
                    let fd = libc::open(p.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                    if fd < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    // "0": the writing process itself.
                    let ok = libc::write(fd, b"0".as_ptr().cast(), 1) == 1;
                    let err = std::io::Error::last_os_error();
                    libc::close(fd);
                    if !ok {
                        return Err(err);
                    }
                }
            }
            Ok(())
        }
    }

    /// How many times the kernel's OOM killer killed a process of the group (v1
    /// `memory.oom_control` `oom_kill`, v2 `memory.events` `oom_kill`); `None` without a
    /// memory limit or a kernel that does not count.
    pub fn oom_kills(&self) -> Option<u64> {
        let dir = self.memory_dir.as_ref()?;
        let f = if self.v2 {
            "memory.events"
        } else {
            "memory.oom_control"
        };
        let s = std::fs::read_to_string(dir.join(f)).ok()?;
        s.lines().find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == "oom_kill").then(|| v.trim().parse().ok()).flatten()
        })
    }

    /// The group's peak memory use (v1 `memory.max_usage_in_bytes`, v2 `memory.peak`).
    pub fn peak_memory(&self) -> Option<u64> {
        let dir = self.memory_dir.as_ref()?;
        let f = if self.v2 {
            "memory.peak"
        } else {
            "memory.max_usage_in_bytes"
        };
        read(&dir.join(f)).and_then(|s| s.parse().ok())
    }

    /// Removes the group's directories (the server and its children are gone by then; a
    /// task still leaving is waited for briefly). Idempotent.
    pub fn remove(&mut self) {
        for d in std::mem::take(&mut self.dirs) {
            for _ in 0..50 {
                match std::fs::remove_dir(&d) {
                    Ok(()) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
                }
            }
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Removes the empty groups that tsbsctl processes no longer alive left under `own` (a kill -9
/// of tsbsctl: its server died with it, the directory stayed).
fn sweep_in(own: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(rd) = std::fs::read_dir(own) else {
        return removed;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        if pid as u32 == std::process::id() || crate::fsutil::process_alive(pid) {
            continue;
        }
        // rmdir fails on a group that still has tasks: those are left (and said by `verify`).
        if std::fs::remove_dir(e.path()).is_ok() {
            removed.push(e.path());
        }
    }
    removed
}

/// Sweeps every hierarchy tsbsctl's group is in; returns what it removed.
pub fn sweep() -> Vec<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    hierarchies(&mountinfo, &cgroup)
        .iter()
        .flat_map(|h| sweep_in(&h.own))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO_V1: &str = "\
30 25 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
32 30 0:28 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
33 30 0:29 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
34 30 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
35 30 0:31 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
36 30 0:32 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const CGROUP_V1: &str = "\
8:pids:/
4:memory:/process_api/11ab
3:cpuset:/
2:cpuacct:/
1:cpu:/
0::/
";

    #[test]
    fn v1_hierarchies_and_our_group_in_each() {
        let h = hierarchies(MOUNTINFO_V1, CGROUP_V1);
        let mem = h.iter().find(|h| h.controllers == ["memory"]).unwrap();
        assert_eq!(mem.own, Path::new("/sys/fs/cgroup/memory/process_api/11ab"));
        let cpu = h.iter().find(|h| h.controllers == ["cpu"]).unwrap();
        assert_eq!(cpu.own, Path::new("/sys/fs/cgroup/cpu"));
        assert!(h
            .iter()
            .any(|h| h.v2 && h.own == Path::new("/sys/fs/cgroup/unified")));
        assert!(!h.iter().any(|h| h.controllers.iter().any(|c| c == "pids")));
    }

    #[test]
    fn v2_with_a_container_root_and_an_escaped_mount_point() {
        let mi = "40 1 0:35 /kubepods/pod1 /sys/fs/cgroup\\040x rw - cgroup2 cgroup2 rw\n";
        let cg = "0::/kubepods/pod1/ctr\n";
        let h = hierarchies(mi, cg);
        assert_eq!(h.len(), 1);
        assert!(h[0].v2);
        assert_eq!(h[0].own, Path::new("/sys/fs/cgroup x/ctr"));
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_cpu_list(""), Vec::<u32>::new());
        assert_eq!(cpu_list(&[0, 1, 5]), "0,1,5");
    }

    #[test]
    fn nonsense_shapes_are_refused_before_any_group_is_looked_for() {
        let e = check(&Shape {
            cpus: Some(0.0),
            memory_bytes: None,
        })
        .unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e:?}");
        let e = check(&Shape {
            cpus: None,
            memory_bytes: Some(1 << 20),
        })
        .unwrap_err();
        assert!(e.message.contains("64 MiB"), "{e:?}");
    }
}
